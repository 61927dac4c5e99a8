import { Badge, Button, Card, Group, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { api, listAll } from '../api';
import { Section, useLoad } from '../ui';

interface Window {
  window: 'day' | 'month';
  limit: number | null;
  used: number;
  remaining: number | null;
  resets_at: string;
}
interface Subscription {
  id: string;
  service_id: string;
  plan: string;
  status: string;
  windows?: Window[];
}

export function SubscriptionsPage() {
  const subs = useLoad(async () => {
    const list = await listAll<Subscription>('/subscriptions?status=active');
    return Promise.all(list.map(async (s) => ({ ...s, windows: (await api<{ windows: Window[] }>('GET', `/subscriptions/${s.id}/quotas`)).windows })));
  });
  const cancel = async (id: string) => {
    await api('DELETE', `/subscriptions/${id}`);
    subs.reload();
  };
  return (
    <Stack>
      <Title order={2}>Subscriptions</Title>
      <Section state={subs} empty={(d) => d.length === 0}>
        {(d) => (
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            {d.map((s) => (
              <Card key={s.id} withBorder>
                <Group justify="space-between">
                  <Text fw={600}>{s.service_id}</Text>
                  <Badge>{s.plan}</Badge>
                </Group>
                {s.windows?.map((w) => (
                  <Stack key={w.window} gap={2} mt="sm">
                    <Text size="sm">
                      {w.window === 'day' ? 'Today' : 'This month'}: {w.used} / {w.limit ?? '∞'}
                    </Text>
                    <Progress
                      value={w.limit ? Math.min(100, (100 * w.used) / w.limit) : 0}
                      color={w.limit && w.used >= w.limit ? 'red' : 'blue'}
                      aria-label={`${w.window} quota used`}
                    />
                  </Stack>
                ))}
                <Button mt="md" size="xs" variant="light" color="red" onClick={() => void cancel(s.id)}>
                  Cancel
                </Button>
              </Card>
            ))}
          </SimpleGrid>
        )}
      </Section>
    </Stack>
  );
}
