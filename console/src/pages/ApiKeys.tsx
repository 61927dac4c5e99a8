import { Button, Group, Stack, Table, TextInput, Title, VisuallyHidden } from '@mantine/core';
import { useState } from 'react';
import { api, listAll } from '../api';
import { ProblemAlert, SecretOnce, Section, fmtDate, useLoad } from '../ui';

interface Key {
  id: string;
  name: string;
  prefix: string;
  last_used_at: string | null;
  expires_at: string | null;
  created_at: string;
}

export function ApiKeysPage() {
  const keys = useLoad(() => listAll<Key>('/api-keys'));
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);

  const create = async () => {
    setError(null);
    try {
      const k = await api<{ key: string }>('POST', '/api-keys', { name });
      setSecret(k.key);
      setName('');
      keys.reload();
    } catch (e) {
      setError(e);
    }
  };
  const revoke = async (id: string) => {
    try {
      await api('DELETE', `/api-keys/${id}`);
      keys.reload();
    } catch (e) {
      setError(e);
    }
  };

  return (
    <Stack>
      <Title order={2}>API keys</Title>
      <Group align="end">
        <TextInput label="Key name" value={name} onChange={(e) => setName(e.currentTarget.value)} placeholder="laptop" />
        <Button onClick={() => void create()} disabled={!name.trim()}>
          Create key
        </Button>
      </Group>
      {secret ? <SecretOnce label="API key" value={secret} /> : null}
      <ProblemAlert error={error} />
      <Section state={keys} empty={(d) => d.length === 0}>
        {(d) => (
          <Table striped>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Prefix</Table.Th>
                <Table.Th>Last used</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {d.map((k) => (
                <Table.Tr key={k.id}>
                  <Table.Td>{k.name}</Table.Td>
                  <Table.Td ff="monospace">{k.prefix}…</Table.Td>
                  <Table.Td>{fmtDate(k.last_used_at)}</Table.Td>
                  <Table.Td>{fmtDate(k.created_at)}</Table.Td>
                  <Table.Td>
                    <Button size="xs" color="red" variant="light" onClick={() => void revoke(k.id)} aria-label={`Revoke ${k.name}`}>
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
