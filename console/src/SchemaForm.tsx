/**
 * A form generated from a tool's JSON Schema (`input_schema`): one field per top-level property
 * (string, number/integer, boolean, enum); anything else is edited as JSON. Produces the
 * `arguments` object of an execution.
 */
import { Button, Checkbox, JsonInput, NumberInput, Select, Stack, TextInput } from '@mantine/core';
import { useState } from 'react';

interface Prop {
  type?: string | string[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
}
export interface JsonSchema {
  type?: string;
  properties?: Record<string, Prop>;
  required?: string[];
}

const kind = (p: Prop): 'enum' | 'string' | 'number' | 'boolean' | 'json' => {
  if (p.enum) return 'enum';
  const t = Array.isArray(p.type) ? p.type.find((x) => x !== 'null') : p.type;
  if (t === 'string') return 'string';
  if (t === 'number' || t === 'integer') return 'number';
  if (t === 'boolean') return 'boolean';
  return 'json';
};

export function SchemaForm({
  schema,
  onSubmit,
  busy,
}: {
  schema: JsonSchema;
  onSubmit: (args: Record<string, unknown>) => void;
  busy?: boolean;
}) {
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const [values, setValues] = useState<Record<string, unknown>>(() =>
    Object.fromEntries(props.filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default])),
  );
  const [jsonError, setJsonError] = useState<string | null>(null);
  const set = (k: string, v: unknown) => setValues((s) => ({ ...s, [k]: v }));

  const submit = () => {
    const args: Record<string, unknown> = {};
    for (const [k, p] of props) {
      const v = values[k];
      if (v === undefined || v === '') continue;
      if (kind(p) === 'json') {
        try {
          args[k] = JSON.parse(String(v));
        } catch {
          setJsonError(`${k} is not valid JSON`);
          return;
        }
      } else args[k] = v;
    }
    setJsonError(null);
    onSubmit(args);
  };

  return (
    <Stack>
      {props.map(([k, p]) => {
        const common = { label: k, description: p.description, withAsterisk: required.has(k) };
        switch (kind(p)) {
          case 'enum':
            return (
              <Select
                key={k}
                {...common}
                data={(p.enum ?? []).map(String)}
                value={(values[k] as string) ?? null}
                onChange={(v) => set(k, v ?? undefined)}
              />
            );
          case 'string':
            return (
              <TextInput
                key={k}
                {...common}
                value={(values[k] as string) ?? ''}
                onChange={(e) => set(k, e.currentTarget.value)}
              />
            );
          case 'number':
            return (
              <NumberInput
                key={k}
                {...common}
                value={(values[k] as number) ?? ''}
                onChange={(v) => set(k, v === '' ? undefined : Number(v))}
              />
            );
          case 'boolean':
            return (
              <Checkbox
                key={k}
                label={k}
                description={p.description}
                checked={!!values[k]}
                onChange={(e) => set(k, e.currentTarget.checked)}
              />
            );
          default:
            return (
              <JsonInput
                key={k}
                {...common}
                autosize
                minRows={2}
                value={(values[k] as string) ?? ''}
                onChange={(v) => set(k, v)}
              />
            );
        }
      })}
      {jsonError ? <div role="alert">{jsonError}</div> : null}
      <Button onClick={submit} loading={busy}>
        Run tool
      </Button>
    </Stack>
  );
}
