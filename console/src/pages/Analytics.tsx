/** Analytics (pro and above): usage over time, latency percentiles, errors, top tools; admins also see the system and its endpoints. */
import { BarChart, LineChart } from '@mantine/charts';
import { Alert, Card, Group, SegmentedControl, SimpleGrid, Stack, Tabs, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { client, type Query } from '../api';
import { hasRole, useAuth } from '../auth';
import { Section, Stat, ms, pct, useLoad } from '../ui';
import { AdminAnalytics } from './AdminAnalytics';

type Window = NonNullable<Query<'analytics.user'>['window']>;
const WINDOWS: Window[] = ['24h', '7d', '30d', '90d'];
/** Counts are whole numbers: no 0.25-call ticks. */
const COUNT_AXIS = { allowDecimals: false } as const;

export function AnalyticsPage() {
  const auth = useAuth();
  const [window, setWindow] = useState<Window>('7d');
  if (!hasRole(auth.me, 'pro', 'enterprise')) {
    return (
      <Stack>
        <Title order={2}>Analytics</Title>
        <Alert color="yellow" title="Analytics need the pro plan" data-testid="needs-pro">
          Usage over time, latency percentiles, top tools and errors are part of the pro plan and above. Your roles:{' '}
          {auth.me?.roles.join(', ') || 'none'}.
        </Alert>
      </Stack>
    );
  }
  const picker = (
    <SegmentedControl value={window} onChange={(v) => setWindow(v as Window)} data={WINDOWS} aria-label="Window" />
  );
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Analytics</Title>
        {picker}
      </Group>
      {hasRole(auth.me, 'admin') ? (
        <Tabs defaultValue="usage" keepMounted={false}>
          <Tabs.List aria-label="Analytics">
            <Tabs.Tab value="usage">Your usage</Tabs.Tab>
            <Tabs.Tab value="system">System</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="usage" pt="md">
            <UserAnalytics window={window} />
          </Tabs.Panel>
          <Tabs.Panel value="system" pt="md">
            <AdminAnalytics window={window} />
          </Tabs.Panel>
        </Tabs>
      ) : (
        <UserAnalytics window={window} />
      )}
    </Stack>
  );
}

function UserAnalytics({ window }: { window: Window }) {
  const data = useLoad(() => client.analytics.user({ window }), [window]);
  const live = useLoad(() => client.analytics.realtime({}));
  return (
    <Section state={data}>
      {(d) => {
        // Days without calls have no error rate or latency (a gap, not a zero).
        const days = d.by_day.map((x) => ({
          ...x,
          error_rate: x.calls ? (100 * x.failures) / x.calls : null,
          avg_duration_ms: x.calls ? x.avg_duration_ms : null,
        }));
        return (
          <Stack>
            <SimpleGrid cols={{ base: 2, md: 5 }}>
              <Stat label="Calls" value={d.totals.calls} />
              <Stat label="Success rate" value={pct(d.totals.success_rate)} />
              <Stat label="Errors" value={d.totals.failures} />
              <Stat label="p50 latency" value={ms(d.totals.p50_duration_ms)} />
              <Stat label="p95 latency" value={ms(d.totals.p95_duration_ms)} />
            </SimpleGrid>
            <Card withBorder data-testid="chart-usage">
              <Title order={3}>Calls per day</Title>
              <LineChart
                h={240}
                data={days}
                dataKey="day"
                series={[
                  { name: 'successes', color: 'teal.8' },
                  { name: 'failures', color: 'red.8' },
                ]}
                curveType="linear"
                yAxisProps={COUNT_AXIS}
                withLegend
              />
            </Card>
            <Card withBorder data-testid="chart-errors">
              <Title order={3}>Error rate per day (%)</Title>
              <LineChart
                h={200}
                data={days}
                dataKey="day"
                series={[{ name: 'error_rate', label: 'error rate', color: 'red.8' }]}
                curveType="linear"
                connectNulls
                yAxisProps={{ domain: [0, 100] }}
                valueFormatter={(v) => `${Math.round(v * 10) / 10} %`}
              />
            </Card>
            <Card withBorder data-testid="chart-latency">
              <Title order={3}>Average latency per day (ms)</Title>
              <LineChart
                h={200}
                data={days}
                dataKey="day"
                series={[{ name: 'avg_duration_ms', label: 'average ms', color: 'blue.8' }]}
                curveType="linear"
                connectNulls
              />
            </Card>
            <Card withBorder data-testid="chart-tools">
              <Title order={3}>Top tools</Title>
              {d.top_tools.length === 0 ? (
                <Text c="dimmed">No tool calls in this period.</Text>
              ) : (
                <BarChart
                  h={240}
                  data={d.top_tools.map((t) => ({
                    tool: `${t.service_name ?? ''}/${t.tool_name}`,
                    successes: t.successes,
                    failures: t.failures,
                  }))}
                  dataKey="tool"
                  type="stacked"
                  maxBarWidth={64}
                  yAxisProps={COUNT_AXIS}
                  series={[
                    { name: 'successes', color: 'blue.8' },
                    { name: 'failures', color: 'red.8' },
                  ]}
                  withLegend
                />
              )}
            </Card>
            <Section state={live}>
              {(r) => (
                <Card withBorder>
                  <Title order={3}>Last 5 minutes</Title>
                  <SimpleGrid cols={{ base: 2, md: 5 }} mt="xs">
                    <Stat label="Requests" value={r.last_5m.requests} />
                    <Stat label="Server errors (5xx)" value={r.last_5m.errors} />
                    <Stat label="Client errors (4xx)" value={r.last_5m.client_errors} />
                    <Stat label="Error rate" value={pct(r.last_5m.error_rate)} />
                    <Stat label="p95 latency" value={ms(r.last_5m.p95_ms)} />
                  </SimpleGrid>
                </Card>
              )}
            </Section>
          </Stack>
        );
      }}
    </Section>
  );
}
