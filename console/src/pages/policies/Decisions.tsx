/** The account's recent policy decisions on tool calls (`GET /v1/policies/decisions`; kept 30 days). */
import { Badge, Button, Group, SegmentedControl, Stack, Table, Title } from '@mantine/core';
import { useState } from 'react';
import { client } from '../../api';
import { Section, TableHead, fmtDate, useLoad } from '../../ui';
import { DECISION_COLORS } from './DryRun';

type Filter = 'all' | 'deny' | 'approval' | 'allow';

export function Decisions() {
  const [filter, setFilter] = useState<Filter>('all');
  const decisions = useLoad(
    async () =>
      (await client.policies.decisions({ limit: 25, ...(filter === 'all' ? {} : { decision: filter }) })).data,
    [filter],
  );
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={3}>Recent decisions</Title>
        <Group>
          <SegmentedControl
            value={filter}
            onChange={(v) => setFilter(v as Filter)}
            data={['all', 'deny', 'approval', 'allow']}
            aria-label="Decision"
          />
          <Button variant="default" size="xs" onClick={decisions.reload}>
            Refresh
          </Button>
        </Group>
      </Group>
      <Section
        state={decisions}
        empty={(d) => d.length === 0}
        emptyText="No decisions yet: they are logged for tool calls once a policy exists (written within seconds)."
      >
        {(d) => (
          <Table striped data-testid="decisions">
            <TableHead columns={['When', 'Tool', 'Caller', 'Decision', 'Policies']} />
            <Table.Tbody>
              {d.map((x) => (
                <Table.Tr key={x.id}>
                  <Table.Td>{fmtDate(x.at)}</Table.Td>
                  <Table.Td ff="monospace">{x.tool}</Table.Td>
                  <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {x.agent_id ?? x.principal}
                  </Table.Td>
                  <Table.Td>
                    <Badge color={DECISION_COLORS[x.decision]}>{x.decision}</Badge>
                  </Table.Td>
                  <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {x.policy_ids.join(', ') || '—'}
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
