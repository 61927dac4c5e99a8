/**
 * Cross-agent grants on key/value memory (`/v2/agents/{id}/permissions`): which other agents may
 * read or write this agent's memory (optionally under a key prefix, until a time), and what this
 * agent may access of others (`/v2/agents/{id}/grants`).
 */
import {
  Badge,
  Button,
  Card,
  Group,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { all, client, type Item } from '../../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';
import type { Agent } from './AgentsPage';

type Grant = Item<'permissions.list'>;

export function GrantsTab({ agentId, agents }: { agentId: string; agents: Agent[] }) {
  const given = useLoad(() => all(client.permissions.list(agentId, { limit: 100 })), [agentId]);
  const received = useLoad(() => all(client.permissions.grants(agentId, { limit: 100 })), [agentId]);
  const [grantee, setGrantee] = useState<string | null>(null);
  const [access, setAccess] = useState<'read' | 'write'>('read');
  const [prefix, setPrefix] = useState('');
  const [hours, setHours] = useState<number | string>('');
  const { error, act } = useAction();
  const nameOf = (id: string) => agents.find((a) => a.id === id)?.name ?? id;
  const others = agents.filter((a) => a.id !== agentId);

  const grant = () =>
    act(async () => {
      await client.permissions.create(agentId, {
        grantee_agent_id: grantee!,
        access,
        ...(prefix.trim() ? { key_prefix: prefix.trim() } : {}),
        ...(hours !== '' ? { expires_at: new Date(Date.now() + Number(hours) * 3600_000).toISOString() } : {}),
      });
      setPrefix('');
      setHours('');
      given.reload();
    });
  const revoke = (g: Grant) =>
    act(async () => {
      await client.permissions.revoke(agentId, g.id);
      given.reload();
    });

  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Title order={3}>Share this agent’s memory</Title>
          {others.length === 0 ? (
            <Text c="dimmed">Create another agent to share this one’s memory with it.</Text>
          ) : null}
          <Group align="end">
            <Select
              label="With agent"
              data={others.map((a) => ({ value: a.id, label: a.name }))}
              value={grantee}
              onChange={setGrantee}
              placeholder="Choose an agent"
            />
            <Stack gap={4}>
              <Text size="sm" fw={500} id="grant-access-label">
                Access
              </Text>
              <SegmentedControl
                value={access}
                onChange={(v) => setAccess(v as 'read' | 'write')}
                data={[
                  { value: 'read', label: 'Read' },
                  { value: 'write', label: 'Read and write' },
                ]}
                aria-labelledby="grant-access-label"
              />
            </Stack>
            <TextInput
              label="Key prefix"
              description="Empty: every key"
              value={prefix}
              onChange={(e) => setPrefix(e.currentTarget.value)}
            />
            <NumberInput
              label="Expires in (hours)"
              description="Empty: never"
              value={hours}
              onChange={setHours}
              min={1}
              max={24 * 365}
            />
            <Button disabled={!grantee} onClick={() => void grant()}>
              Grant
            </Button>
          </Group>
          <ProblemAlert error={error} />
        </Stack>
      </Card>
      <Title order={3}>Agents that may use this agent’s memory</Title>
      <Section state={given} empty={(d) => d.length === 0} emptyText="No agent may use it yet.">
        {(d) => (
          <GrantTable
            rows={d}
            who={(g) => nameOf(g.grantee_agent_id)}
            testId="grants-given"
            action={(g) => (
              <Button
                size="xs"
                color="red"
                variant="light"
                onClick={() => void revoke(g)}
                aria-label={`Revoke the grant to ${nameOf(g.grantee_agent_id)}`}
              >
                Revoke
              </Button>
            )}
          />
        )}
      </Section>
      <Title order={3}>Memory this agent may use</Title>
      <Section
        state={received}
        empty={(d) => d.length === 0}
        emptyText="No other agent shares its memory with this one."
      >
        {(d) => <GrantTable rows={d} who={(g) => nameOf(g.agent_id)} testId="grants-received" />}
      </Section>
    </Stack>
  );
}

function GrantTable({
  rows,
  who,
  testId,
  action,
}: {
  rows: Grant[];
  who(g: Grant): string;
  testId: string;
  action?: (g: Grant) => ReactNode;
}) {
  return (
    <Table data-testid={testId}>
      <TableHead columns={['Agent', 'Access', 'Keys', 'Expires', ...(action ? [{ hidden: 'Actions' }] : [])]} />
      <Table.Tbody>
        {rows.map((g) => (
          <Table.Tr key={g.id}>
            <Table.Td>{who(g)}</Table.Td>
            <Table.Td>
              <Badge color={g.access === 'write' ? 'orange' : 'blue'}>{g.access}</Badge>
            </Table.Td>
            <Table.Td ff="monospace">{g.key_prefix ? `${g.key_prefix}*` : 'all'}</Table.Td>
            <Table.Td>{g.expires_at ? fmtDate(g.expires_at) : 'never'}</Table.Td>
            {action ? <Table.Td>{action(g)}</Table.Td> : null}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
