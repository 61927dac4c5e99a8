/** System and endpoint analytics (role admin): platform totals, and per-route requests, errors and latency percentiles. */
import { BarChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { client, type Query } from '../api';
import { Section, Stat, TableHead, ms, pct, useLoad } from '../ui';

type Window = NonNullable<Query<'analytics.system'>['window']>;
type Sort = NonNullable<Query<'analytics.endpoints'>['sort']>;

/** Routes shown in the charts (the busiest / slowest) and in the table. */
const TOP = 10;
const ROWS = 25;
/** Every route label on the category axis (recharts skips some by default), wide enough to read. */
const ROUTE_AXIS = { width: 340, interval: 0 } as const;

export function AdminAnalytics({ window }: { window: Window }) {
  const system = useLoad(() => client.analytics.system({ window }), [window]);
  const [sort, setSort] = useState<Sort>('requests');
  const endpoints = useLoad(() => client.analytics.endpoints({ window, limit: 100 }), [window]);
  const table = useLoad(() => client.analytics.endpoints({ window, sort, limit: ROWS }), [window, sort]);
  return (
    <Stack>
      <Section state={system}>
        {(s) => (
          <Stack data-testid="system-analytics">
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              <Stat label="Users" value={s.users.total} />
              <Stat label="Active users" value={s.users.active_in_period} />
              <Stat label="Services" value={s.services.total} />
              <Stat label="Agents" value={s.agents.total} />
              <Stat label="Tool calls" value={s.executions.calls} />
              <Stat label="Tool error rate" value={pct(s.executions.error_rate)} />
              <Stat label="API requests" value={s.requests.total} />
              <Stat label="API error rate (5xx)" value={pct(s.requests.error_rate)} />
            </SimpleGrid>
          </Stack>
        )}
      </Section>
      <Section state={endpoints} empty={(e) => e.data.length === 0} emptyText="No API requests in this period.">
        {(e) => {
          const byRequests = e.data.slice(0, TOP).map((r) => ({
            route: `${r.method} ${r.route}`,
            ok: r.requests - r.errors - r.client_errors,
            client_errors: r.client_errors,
            errors: r.errors,
          }));
          const slowest = [...e.data]
            .sort((a, b) => (b.p95_ms ?? 0) - (a.p95_ms ?? 0))
            .slice(0, TOP)
            .map((r) => ({
              route: `${r.method} ${r.route}`,
              p50: r.p50_ms ?? 0,
              p95: r.p95_ms ?? 0,
              p99: r.p99_ms ?? 0,
            }));
          return (
            <Stack>
              <Card withBorder data-testid="chart-endpoints">
                <Title order={3}>Busiest endpoints</Title>
                <BarChart
                  h={300}
                  data={byRequests}
                  dataKey="route"
                  type="stacked"
                  orientation="vertical"
                  yAxisProps={ROUTE_AXIS}
                  xAxisProps={{ allowDecimals: false }}
                  withLegend
                  series={[
                    { name: 'ok', color: 'teal.8' },
                    { name: 'client_errors', label: '4xx', color: 'yellow.8' },
                    { name: 'errors', label: '5xx', color: 'red.8' },
                  ]}
                />
              </Card>
              <Card withBorder data-testid="chart-endpoint-latency">
                <Title order={3}>Slowest endpoints (ms)</Title>
                <BarChart
                  h={300}
                  data={slowest}
                  dataKey="route"
                  orientation="vertical"
                  yAxisProps={ROUTE_AXIS}
                  withLegend
                  series={[
                    { name: 'p50', color: 'blue.8' },
                    { name: 'p95', color: 'violet.8' },
                    { name: 'p99', color: 'grape.8' },
                  ]}
                />
              </Card>
              <Text size="sm">
                {e.totals.requests} requests on {e.totals.routes} routes · error rate {pct(e.totals.error_rate)}
              </Text>
            </Stack>
          );
        }}
      </Section>
      <Group justify="space-between">
        <Title order={3}>Endpoints</Title>
        <SegmentedControl
          size="xs"
          value={sort}
          onChange={(v) => setSort(v as Sort)}
          data={[
            { value: 'requests', label: 'Most requests' },
            { value: 'p95', label: 'Slowest (p95)' },
            { value: 'errors', label: 'Most errors' },
          ]}
          aria-label="Sort endpoints"
        />
      </Group>
      <Section state={table} empty={(t) => t.data.length === 0} emptyText="No API requests in this period.">
        {(t) => (
          <Table data-testid="endpoints" striped>
            <TableHead columns={['Endpoint', 'Requests', '4xx', '5xx', 'p50', 'p95', 'p99']} />
            <Table.Tbody>
              {t.data.map((r) => (
                <Table.Tr key={`${r.method} ${r.route}`}>
                  <Table.Td ff="monospace">
                    {r.method} {r.route}
                  </Table.Td>
                  <Table.Td>{r.requests}</Table.Td>
                  <Table.Td>{r.client_errors}</Table.Td>
                  <Table.Td>{r.errors}</Table.Td>
                  <Table.Td>{ms(r.p50_ms)}</Table.Td>
                  <Table.Td>{ms(r.p95_ms)}</Table.Td>
                  <Table.Td>{ms(r.p99_ms)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
    </Stack>
  );
}
