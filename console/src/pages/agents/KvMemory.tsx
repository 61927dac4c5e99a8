/** An agent's key/value memory as its owner sees it (`/v2/agents/{id}/memory`): browse by prefix, put an entry. */
import { Button, Card, Code, Group, JsonInput, Stack, Table, TextInput, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';
import { all, client } from '../../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';

export function KvMemoryTab({ agentId }: { agentId: string }) {
  const [prefix, setPrefix] = useState('');
  const [debounced] = useDebouncedValue(prefix, 200);
  const entries = useLoad(
    () => all(client.agentMemory.list({ limit: 100, ...(debounced ? { prefix: debounced } : {}) }, agentId), 200),
    [agentId, debounced],
  );
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const { error, setError, act } = useAction();
  const put = () =>
    act(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch (e) {
        return setError(new Error(`The value is not valid JSON: ${(e as Error).message}`));
      }
      await client.agentMemory.put(key.trim(), parsed, { agentId });
      setKey('');
      setValue('');
      entries.reload();
    });
  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Title order={3}>Put an entry</Title>
          <Group align="end" grow>
            <TextInput label="Key" value={key} onChange={(e) => setKey(e.currentTarget.value)} />
            <JsonInput label="Value (JSON)" value={value} onChange={setValue} autosize minRows={1} />
          </Group>
          <Button onClick={() => void put()} disabled={!key.trim() || !value.trim()}>
            Save entry
          </Button>
          <ProblemAlert error={error} />
        </Stack>
      </Card>
      <TextInput label="Filter by key prefix" value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)} />
      <Section state={entries} empty={(d) => d.length === 0} emptyText="No entries yet.">
        {(d) => (
          <Table data-testid="kv-entries">
            <TableHead columns={['Key', 'Value', 'Version', 'Updated']} />
            <Table.Tbody>
              {d.map((e) => (
                <Table.Tr key={e.key}>
                  <Table.Td ff="monospace">{e.key}</Table.Td>
                  <Table.Td>
                    <Code>{JSON.stringify(e.value)}</Code>
                  </Table.Td>
                  <Table.Td>{e.version}</Table.Td>
                  <Table.Td>{fmtDate(e.updated_at)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
    </Stack>
  );
}
