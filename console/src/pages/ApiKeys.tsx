import { Button, Group, MultiSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { all, client } from '../api';
import { ProblemAlert, SecretOnce, Section, TableHead, fmtDate, useAction, useLoad } from '../ui';

type Scope = NonNullable<Parameters<typeof client.apiKeys.create>[0]['scopes']>[number];

/**
 * What each scope lets a key do (docs/identity.md); typed by the API's scope enum, so a scope the
 * API adds fails the build until it is described here. The last two are given only when chosen.
 */
const SCOPE_HELP: Record<Scope, string> = {
  'memory:read': 'read and search memory',
  'memory:write': 'add and delete memory',
  'permissions:manage': "grant agents' memory to other agents",
  'tools:execute': 'call tools',
  'agents:manage': 'create and manage agents',
  'api_keys:manage': 'create, list and revoke keys',
  'approvals:decide': 'approve held tool calls, accept changed tools',
  'policies:manage': 'write policies',
};

export function ApiKeysPage() {
  const keys = useLoad(() => all(client.apiKeys.list({ limit: 100 })));
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const { error, act } = useAction();

  const create = () =>
    act(async () => {
      const k = await client.apiKeys.create({ name, ...(scopes.length ? { scopes } : {}) });
      setSecret(k.key);
      setName('');
      setScopes([]);
      keys.reload();
    });
  const revoke = (id: string) =>
    act(async () => {
      await client.apiKeys.revoke(id);
      keys.reload();
    });

  return (
    <Stack>
      <Title order={2}>API keys</Title>
      <Group align="end">
        <TextInput
          label="Key name"
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Enter' && name.trim() && void create()}
          placeholder="laptop"
        />
        <MultiSelect
          label="Scopes"
          data={Object.keys(SCOPE_HELP)}
          renderOption={({ option }) => (
            <Stack gap={0}>
              <Text size="sm">{option.value}</Text>
              <Text size="xs" c="dimmed">
                {SCOPE_HELP[option.value as Scope]}
              </Text>
            </Stack>
          )}
          value={scopes}
          onChange={(v) => setScopes(v as Scope[])}
          placeholder={scopes.length ? undefined : 'default: all but approvals:decide, policies:manage'}
          clearable
          miw={320}
        />
        <Button onClick={() => void create()} disabled={!name.trim()}>
          Create key
        </Button>
      </Group>
      {secret ? <SecretOnce label="API key" value={secret} /> : null}
      <ProblemAlert error={error} />
      <Section state={keys} empty={(d) => d.length === 0} emptyText="No API keys yet: create one above.">
        {(d) => (
          <Table striped>
            <TableHead columns={['Name', 'Prefix', 'Scopes', 'Last used', 'Created', { hidden: 'Actions' }]} />
            <Table.Tbody>
              {d.map((k) => (
                <Table.Tr key={k.id}>
                  <Table.Td>{k.name}</Table.Td>
                  <Table.Td ff="monospace">{k.prefix}…</Table.Td>
                  <Table.Td>{k.scopes.join(' ') || '—'}</Table.Td>
                  <Table.Td>{fmtDate(k.last_used_at)}</Table.Td>
                  <Table.Td>{fmtDate(k.created_at)}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      color="red"
                      variant="light"
                      onClick={() => void revoke(k.id)}
                      aria-label={`Revoke ${k.name}`}
                    >
                      Revoke
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
    </Stack>
  );
}
