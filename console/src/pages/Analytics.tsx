import { BarChart, LineChart } from '@mantine/charts';
import { Card, Group, SegmentedControl, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { api } from '../api';
import { hasRole, useAuth } from '../auth';
import { Section, useLoad } from '../ui';

interface UserAnalytics {
  totals: { calls: number; successes: number; failures: number; success_rate: number | null; p50_duration_ms: number | null; p95_duration_ms: number | null; avg_duration_ms: number };
  by_day: Array<{ day: string; calls: number; successes: number; failures: number; avg_duration_ms: number }>;
  top_tools: Array<{ tool_name: string; service_name: string | null; calls: number; failures: number; avg_duration_ms: number }>;
}

export function AnalyticsPage() {
  const auth = useAuth();
  const [window, setWindow] = useState('7d');
  const data = useLoad(() => api<UserAnalytics>('GET', `/analytics/user?window=${window}`), [window]);
  if (!hasRole(auth.me, 'pro', 'enterprise')) {
    return (
      <Stack>
        <Title order={2}>Analytics</Title>
        <Text>Usage analytics are part of the pro plan and above.</Text>
      </Stack>
    );
  }
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Analytics</Title>
        <SegmentedControl value={window} onChange={setWindow} data={['24h', '7d', '30d']} aria-label="Window" />
      </Group>
      <Section state={data}>
        {(d) => (
          <Stack>
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              <Stat label="Calls" value={d.totals.calls} />
              <Stat label="Success rate" value={d.totals.success_rate === null ? '—' : `${Math.round(d.totals.success_rate * 100)} %`} />
              <Stat label="p50 latency" value={d.totals.p50_duration_ms === null ? '—' : `${d.totals.p50_duration_ms} ms`} />
              <Stat label="p95 latency" value={d.totals.p95_duration_ms === null ? '—' : `${d.totals.p95_duration_ms} ms`} />
            </SimpleGrid>
            <Card withBorder data-testid="chart-usage">
              <Title order={3}>Calls per day</Title>
              <LineChart h={240} data={d.by_day} dataKey="day" series={[{ name: 'successes', color: 'teal.6' }, { name: 'failures', color: 'red.6' }]} curveType="monotone" />
            </Card>
            <Card withBorder data-testid="chart-latency">
              <Title order={3}>Average latency per day (ms)</Title>
              <LineChart h={200} data={d.by_day} dataKey="day" series={[{ name: 'avg_duration_ms', color: 'blue.6' }]} />
            </Card>
            <Card withBorder data-testid="chart-tools">
              <Title order={3}>Top tools</Title>
              <BarChart h={240} data={d.top_tools.map((t) => ({ tool: `${t.service_name ?? ''}/${t.tool_name}`, calls: t.calls, failures: t.failures }))} dataKey="tool" series={[{ name: 'calls', color: 'blue.6' }, { name: 'failures', color: 'red.6' }]} />
            </Card>
          </Stack>
        )}
      </Section>
    </Stack>
  );
}

function Stat({ label, value }: { label: string; value: string | number }) {
  return (
    <Card withBorder>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={700} size="xl">
        {value}
      </Text>
    </Card>
  );
}
