/** Small shared pieces: the loading / error / empty states every page shows, and a data hook. */
import { Alert, Button, Card, Center, CopyButton, Group, Loader, Table, Text, VisuallyHidden } from '@mantine/core';
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { AgentPlatformError, noteError, startSignIn } from './api';

export interface Loaded<T> {
  data: T | null;
  error: AgentPlatformError | Error | null;
  loading: boolean;
  reload(): void;
}

/** Run `load` on mount (and when `deps` change); `reload()` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: Error | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(load, deps);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    run().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: Error) => {
        noteError(error);
        if (live) setState({ data: null, error, loading: false });
      },
    );
    return () => {
      live = false;
    };
  }, [run, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** `act(fn)` runs a user action and keeps its error (cleared on the next action) for `<ProblemAlert>`. */
export function useAction(): {
  error: unknown;
  setError(e: unknown): void;
  act(fn: () => Promise<void>): Promise<void>;
} {
  const [error, setError] = useState<unknown>(null);
  const act = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      noteError(e);
      setError(e);
    }
  };
  return { error, setError, act };
}

/**
 * A problem shown to a person: the problem's `detail` (RFC 9457) and its failing fields, and what
 * 401 (the session ended: sign in again), 403 (the role does not allow it) and 404 mean.
 */
export function ProblemAlert({ error, title, children }: { error: unknown; title?: string; children?: ReactNode }) {
  if (!error) return null;
  const e =
    error instanceof AgentPlatformError
      ? error
      : { status: undefined, detail: (error as Error).message ?? String(error), errors: [] };
  const heading =
    title ??
    (e.status === 403
      ? 'Not allowed for your role'
      : e.status === 401
        ? 'Signed out'
        : e.status === 404
          ? 'Not found'
          : e.status === 409
            ? 'Not possible right now'
            : e.status === 0
              ? 'The platform cannot be reached'
              : 'Something went wrong');
  return (
    <Alert color={e.status === 403 ? 'yellow' : 'red'} title={heading} role="alert">
      <Text size="sm">{e.detail}</Text>
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
      {e.status === 401 ? (
        <Button
          mt="xs"
          size="xs"
          onClick={() => void startSignIn(window.location.pathname.replace(/^\/console/, '') || '/')}
        >
          Sign in again
        </Button>
      ) : null}
      {children}
    </Alert>
  );
}

/** Loading → error → empty → content, the same way on every page. */
export function Section<T>({
  state,
  empty,
  emptyText,
  children,
}: {
  state: Loaded<T>;
  empty?: (d: T) => boolean;
  emptyText?: string;
  children: (d: T) => ReactNode;
}) {
  if (state.loading && !state.data) {
    return (
      <Center p="lg">
        <Loader aria-label="Loading" />
      </Center>
    );
  }
  if (state.error) return <ProblemAlert error={state.error} />;
  if (state.data === null) return null;
  if (empty?.(state.data)) return <Text c="dimmed">{emptyText ?? 'Nothing here yet.'}</Text>;
  return <>{children(state.data)}</>;
}

/** A table's head row: column titles; `{ hidden }` names a column (of buttons) for screen readers only. */
export function TableHead({ columns }: { columns: Array<string | { hidden: string }> }) {
  return (
    <Table.Thead>
      <Table.Tr>
        {columns.map((c) => (
          <Table.Th key={typeof c === 'string' ? c : c.hidden}>
            {typeof c === 'string' ? c : <VisuallyHidden>{c.hidden}</VisuallyHidden>}
          </Table.Th>
        ))}
      </Table.Tr>
    </Table.Thead>
  );
}

/** A secret shown once, with a copy button. */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  return (
    <Alert color="green" title={`${label} — shown only this once`} role="status">
      <Group>
        <Text ff="monospace" data-testid="secret" style={{ wordBreak: 'break-all' }}>
          {value}
        </Text>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Button size="xs" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </Button>
          )}
        </CopyButton>
      </Group>
    </Alert>
  );
}

/** A figure on a card: label above, value below. */
export function Stat({ label, value }: { label: string; value: string | number }) {
  return (
    <Card withBorder>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={700} size="xl">
        {value}
      </Text>
    </Card>
  );
}

/** A ratio as a percentage: `0.125` → `12.5 %`; null (nothing counted) → `—`. */
export const pct = (r: number | null | undefined) =>
  r === null || r === undefined ? '—' : `${Math.round(r * 1000) / 10} %`;
/** Milliseconds, rounded; null → `—`. */
export const ms = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `${Math.round(v)} ms`);

/** `n` and a noun, plural unless n is 1: `plural(1, 'call')` → `1 call`, `plural(3, 'call')` → `3 calls`. */
export const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

export const fmtDate = (s: string | null | undefined) => (s ? new Date(s).toLocaleString() : '—');
