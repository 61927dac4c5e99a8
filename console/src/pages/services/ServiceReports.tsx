/** Reports users sent about one of the caller's services (`GET /owner/services/{id}/reports`), resolved here. */
import { Badge, Button, Card, Group, SegmentedControl, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { all, client } from '../../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';
import type { OwnService } from './ServiceSettings';

export function ServiceReports({ service, onChange }: { service: OwnService; onChange(): void }) {
  const [status, setStatus] = useState<'open' | 'resolved' | 'all'>('open');
  const reports = useLoad(
    () => all(client.publishing.listReports(service.id, { limit: 100, ...(status === 'all' ? {} : { status }) })),
    [service.id, status],
  );
  const { error, act } = useAction();
  const toolName = new Map(service.tools.map((t) => [t.id, t.name]));
  const resolve = (id: string) =>
    act(async () => {
      await client.publishing.resolveReport(service.id, id);
      reports.reload();
      onChange();
    });
  return (
    <Card withBorder>
      <Stack>
        <Group justify="space-between">
          <Title order={3}>Reports</Title>
          <SegmentedControl
            size="xs"
            value={status}
            onChange={(v) => setStatus(v as typeof status)}
            data={[
              { value: 'open', label: 'Open' },
              { value: 'resolved', label: 'Resolved' },
              { value: 'all', label: 'All' },
            ]}
            aria-label="Report status"
          />
        </Group>
        <Text size="sm" c="dimmed">
          {service.reports.open} open; {service.reports.degraded_tools} tool(s) degraded by reports.
        </Text>
        <ProblemAlert error={error} />
        <Section
          state={reports}
          empty={(d) => d.length === 0}
          emptyText={status === 'open' ? 'No open reports.' : 'No reports.'}
        >
          {(d) => (
            <Table data-testid="reports">
              <TableHead columns={['When', 'About', 'Reason', 'Details', 'Status', { hidden: 'Actions' }]} />
              <Table.Tbody>
                {d.map((r) => (
                  <Table.Tr key={r.id}>
                    <Table.Td>{fmtDate(r.created_at)}</Table.Td>
                    <Table.Td>{r.tool_id ? (toolName.get(r.tool_id) ?? r.tool_id) : 'the service'}</Table.Td>
                    <Table.Td>{r.reason.replace('_', ' ')}</Table.Td>
                    <Table.Td>{r.details ?? '—'}</Table.Td>
                    <Table.Td>
                      <Badge color={r.status === 'open' ? 'orange' : 'green'}>{r.status}</Badge>
                    </Table.Td>
                    <Table.Td>
                      {r.status === 'open' ? (
                        <Button
                          size="xs"
                          variant="light"
                          onClick={() => void resolve(r.id)}
                          aria-label={`Resolve report ${r.id}`}
                        >
                          Resolve
                        </Button>
                      ) : (
                        fmtDate(r.resolved_at)
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )}
        </Section>
      </Stack>
    </Card>
  );
}
