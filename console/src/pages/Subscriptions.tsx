import { Badge, Button, Card, Group, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { all, client } from '../api';
import { ProblemAlert, Section, fmtDate, useAction, useLoad } from '../ui';

export function SubscriptionsPage() {
  const subs = useLoad(async () => {
    const [list, services] = await Promise.all([
      all(client.subscriptions.list({ status: 'active', limit: 100 })),
      all(client.services.list({ limit: 100 }), 500),
    ]);
    const names = new Map(services.map((s) => [s.id, s.display_name || s.name]));
    return Promise.all(
      list.map(async (s) => ({
        ...s,
        name: names.get(s.service_id) ?? s.service_id,
        windows: (await client.subscriptions.quotas(s.id)).windows,
      })),
    );
  });
  const { error, act } = useAction();
  const cancel = (id: string) =>
    act(async () => {
      await client.subscriptions.cancel(id);
      subs.reload();
    });
  return (
    <Stack>
      <Title order={2}>Subscriptions</Title>
      <ProblemAlert error={error} />
      <Section
        state={subs}
        empty={(d) => d.length === 0}
        emptyText="No subscriptions yet: running a tool in the marketplace subscribes you to its free plan."
      >
        {(d) => (
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            {d.map((s) => (
              <Card key={s.id} withBorder>
                <Group justify="space-between">
                  <Text fw={600}>{s.name}</Text>
                  <Badge>{s.plan}</Badge>
                </Group>
                {s.windows.map((w) => (
                  <Stack key={w.window} gap={2} mt="sm">
                    <Text size="sm">
                      {w.window === 'day' ? 'Today' : 'This month'}: {w.used} / {w.limit ?? '∞'}
                      <Text span size="xs" c="dimmed">
                        {' '}
                        · resets {fmtDate(w.resets_at)}
                      </Text>
                    </Text>
                    <Progress
                      value={w.limit ? Math.min(100, (100 * w.used) / w.limit) : 0}
                      color={w.limit && w.used >= w.limit ? 'red' : 'blue'}
                      aria-label={`${s.name}: ${w.window} quota used`}
                    />
                  </Stack>
                ))}
                <Button
                  mt="md"
                  size="xs"
                  variant="light"
                  color="red"
                  onClick={() => void cancel(s.id)}
                  aria-label={`Cancel the subscription to ${s.name}`}
                >
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
