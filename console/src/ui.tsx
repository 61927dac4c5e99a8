/** Small shared pieces: the loading / error / empty states every page shows, and a data hook. */
import { Alert, Button, Center, CopyButton, Group, Loader, Text } from '@mantine/core';
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { ApiError } from './api';

export interface Loaded<T> {
  data: T | null;
  error: ApiError | Error | null;
  loading: boolean;
  reload(): void;
}

/** Run `load` on mount (and when `deps` change); `reload()` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: Error | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(load, deps);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    run().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: Error) => live && setState({ data: null, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [run, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** `act(fn)` runs a user action and keeps its error (cleared on the next action) for `<ProblemAlert>`. */
export function useAction(): { error: unknown; setError(e: unknown): void; act(fn: () => Promise<void>): Promise<void> } {
  const [error, setError] = useState<unknown>(null);
  const act = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    }
  };
  return { error, setError, act };
}

/** A problem shown to a person: the problem's `detail`, and what 401/403 mean. */
export function ProblemAlert({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const e = error as ApiError;
  const heading =
    title ?? (e.status === 403 ? 'Not allowed for your role' : e.status === 401 ? 'Signed out' : e.status === 404 ? 'Not found' : 'Something went wrong');
  return (
    <Alert color={e.status === 403 ? 'yellow' : 'red'} title={heading} role="alert">
      <Text size="sm">{e.detail ?? e.message}</Text>
      {e.errors?.length ? (
        <ul>
          {e.errors.map((x, i) => (
            <li key={i}>
              <Text size="sm" span>
                {x.pointer ? `${x.pointer}: ` : ''}
                {x.message}
              </Text>
            </li>
          ))}
        </ul>
      ) : null}
    </Alert>
  );
}

/** Loading → error → empty → content, the same way on every page. */
export function Section<T>({ state, empty, children }: { state: Loaded<T>; empty?: (d: T) => boolean; children: (d: T) => ReactNode }) {
  if (state.loading && !state.data) {
    return (
      <Center p="lg">
        <Loader aria-label="Loading" />
      </Center>
    );
  }
  if (state.error) return <ProblemAlert error={state.error} />;
  if (state.data === null) return null;
  if (empty?.(state.data)) return <Text c="dimmed">Nothing here yet.</Text>;
  return <>{children(state.data)}</>;
}

/** A secret shown once, with a copy button. */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  return (
    <Alert color="green" title={`${label} — shown only this once`}>
      <Group>
        <Text ff="monospace" data-testid="secret" style={{ wordBreak: 'break-all' }}>
          {value}
        </Text>
        <CopyButton value={value}>{({ copied, copy }) => <Button size="xs" onClick={copy}>{copied ? 'Copied' : 'Copy'}</Button>}</CopyButton>
      </Group>
    </Alert>
  );
}

export const fmtDate = (s: string | null | undefined) => (s ? new Date(s).toLocaleString() : '—');
