/**
 * The Cedar editor of one policy (create, or edit an existing one): a monospace text area whose
 * syntax and schema errors — the API's 400 `validation_failed` with `cedar_errors` (line, column,
 * offset; docs/governance.md#policies) — show under it at their line, with a caret under the column,
 * and put the cursor there.
 */
import { Button, Code, Group, Select, Stack, Switch, Text, TextInput, Textarea, Title } from '@mantine/core';
import { useRef, useState } from 'react';
import { AgentPlatformError, client, type Item } from '../../api';
import { ProblemAlert, useAction } from '../../ui';

export type Policy = Item<'policies.list'>;

/** One error of a Cedar text as the API reports it (`cedar_errors[]`). */
export interface CedarError {
  message: string;
  help?: string | null;
  line: number | null;
  column: number | null;
  offset: number | null;
}

/** The `cedar_errors` of a refused policy text, or null when the error is of another kind. */
export function cedarErrorsOf(e: unknown): CedarError[] | null {
  if (!(e instanceof AgentPlatformError) || e.status !== 400) return null;
  const list = (e.body as { cedar_errors?: unknown } | undefined)?.cedar_errors;
  return Array.isArray(list) && list.length ? (list as CedarError[]) : null;
}

const EXAMPLE =
  'forbid(principal is Platform::Agent, action, resource)\nunless { resource.tags.contains("read_only") };';

/** The line of `source` an error points at, and a caret under its column. */
function Pointed({ source, error }: { source: string; error: CedarError }) {
  if (error.line === null || error.column === null) return null;
  const text = source.split('\n')[error.line - 1] ?? '';
  return (
    <Code block c="var(--mantine-color-text)" data-testid="cedar-error-line">
      {`${text}\n${' '.repeat(Math.max(0, error.column - 1))}^`}
    </Code>
  );
}

/** Errors of the text, each at its line and column. */
function CedarErrors({ source, errors }: { source: string; errors: CedarError[] }) {
  return (
    <Stack gap={4} data-testid="cedar-errors">
      {errors.map((e) => (
        <Stack key={`${e.offset} ${e.message}`} gap={2}>
          <Text size="sm" c="red.9">
            {e.line === null ? '' : `Line ${e.line}, column ${e.column}: `}
            {e.message}
          </Text>
          {e.help ? (
            <Text size="xs" c="dimmed">
              {e.help}
            </Text>
          ) : null}
          <Pointed source={source} error={e} />
        </Stack>
      ))}
    </Stack>
  );
}

/**
 * Create a policy (`policy` absent) or change one. `onSource` follows the text as it is typed (the
 * dry run can evaluate the unsaved draft); `onSaved` gets the stored policy.
 */
export function PolicyEditor({
  policy,
  admin,
  onSource,
  onSaved,
  onCancel,
}: {
  policy?: Policy;
  admin: boolean;
  onSource(source: string): void;
  onSaved(p: Policy): void;
  onCancel?: () => void;
}) {
  const [source, setSourceState] = useState(policy?.source ?? EXAMPLE);
  const [description, setDescription] = useState(policy?.description ?? '');
  const [enabled, setEnabled] = useState(policy?.enabled ?? true);
  const [scope, setScope] = useState<'account' | 'global'>('account');
  const [cedarErrors, setCedarErrors] = useState<CedarError[] | null>(null);
  const area = useRef<HTMLTextAreaElement>(null);
  const { error, act } = useAction();
  const setSource = (s: string) => {
    setSourceState(s);
    onSource(s);
  };

  const save = () =>
    act(async () => {
      setCedarErrors(null);
      try {
        const saved = policy
          ? await client.policies.update(policy.id, { source, description, enabled })
          : await client.policies.create({ source, description, enabled, ...(admin ? { scope } : {}) });
        onSaved(saved);
      } catch (e) {
        const errors = cedarErrorsOf(e);
        if (!errors) throw e;
        setCedarErrors(errors);
        const first = errors.find((x) => x.offset !== null);
        if (first?.offset != null && area.current) {
          area.current.focus();
          area.current.setSelectionRange(first.offset, Math.min(source.length, first.offset + 1));
        }
      }
    });

  const title = policy ? `Edit ${policy.id}` : 'New policy';
  return (
    <Stack>
      <Title order={3}>{title}</Title>
      <TextInput
        label="Description"
        value={description}
        maxLength={1000}
        onChange={(e) => setDescription(e.currentTarget.value)}
      />
      <Textarea
        ref={area}
        label="Cedar policy"
        description={
          'One forbid statement; @approval("required") holds a matching call for a person instead of denying it.'
        }
        value={source}
        onChange={(e) => {
          setSource(e.currentTarget.value);
          setCedarErrors(null);
        }}
        autosize
        minRows={5}
        spellCheck={false}
        styles={{
          input: { fontFamily: 'var(--mantine-font-family-monospace)', color: 'var(--mantine-color-text)' },
          error: { color: 'var(--mantine-color-red-9)' },
        }}
        error={cedarErrors ? <CedarErrors source={source} errors={cedarErrors} /> : undefined}
        data-testid="policy-source"
      />
      <Group>
        <Switch label="Enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
        {admin && !policy ? (
          <Select
            label="Scope"
            value={scope}
            onChange={(v) => setScope((v as 'account' | 'global' | null) ?? 'account')}
            data={[
              { value: 'account', label: 'This account' },
              { value: 'global', label: 'Global (everyone)' },
            ]}
            allowDeselect={false}
          />
        ) : null}
      </Group>
      <Group>
        <Button onClick={() => void save()} disabled={!source.trim()}>
          {policy ? 'Save policy' : 'Create policy'}
        </Button>
        {onCancel ? (
          <Button variant="default" onClick={onCancel}>
            Cancel
          </Button>
        ) : null}
      </Group>
      <ProblemAlert error={error} />
    </Stack>
  );
}
