/**
 * Subscriptions: quota bars per active subscription, and the tools whose pinned definitions changed
 * since the account subscribed (docs/governance.md "Pinned tool definitions"): each change's RFC 6902
 * diff as path, old → new, and the "Accept changes" that re-pins them so they run again.
 */
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  Progress,
  SimpleGrid,
  Stack,
  Table,
  Text,
  Title,
} from '@mantine/core';
import { all, client, type Result } from '../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../ui';

type Change = NonNullable<Result<'subscriptions.get'>['pending_changes']>[number];

export function SubscriptionsPage() {
  const subs = useLoad(async () => {
    const [list, services] = await Promise.all([
      all(client.subscriptions.list({ status: 'active', limit: 100 })),
      all(client.services.list({ limit: 100 }), 500),
    ]);
    const names = new Map(services.map((s) => [s.id, s.display_name || s.name]));
    return Promise.all(
      list.map(async (s) => {
        const [quotas, one] = await Promise.all([client.subscriptions.quotas(s.id), client.subscriptions.get(s.id)]);
        return {
          ...s,
          name: names.get(s.service_id) ?? s.service_id,
          windows: quotas.windows,
          changes: one.pending_changes ?? [],
        };
      }),
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
                {s.changes.length ? (
                  <PendingChanges subscriptionId={s.id} name={s.name} changes={s.changes} onAccepted={subs.reload} />
                ) : null}
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

/** The value at an RFC 6901 JSON Pointer of `doc` (undefined when there is none). */
function at(doc: unknown, pointer: string): unknown {
  if (pointer === '') return doc;
  let v: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (v === null || typeof v !== 'object' || !(key in v)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** A value of a definition as a person reads it: strings as they are, the rest as JSON. */
function Value({ value }: { value: unknown }) {
  if (value === undefined) return <Text c="dimmed">—</Text>;
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return (
    <Code block style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
      {text}
    </Code>
  );
}

/**
 * The subscription's tools whose definitions changed (or were added) since they were pinned: until
 * accepted, running them answers 409 `tool_definition_changed`.
 */
function PendingChanges({
  subscriptionId,
  name,
  changes,
  onAccepted,
}: {
  subscriptionId: string;
  name: string;
  changes: Change[];
  onAccepted: () => void;
}) {
  const { error, act } = useAction();
  const accept = () =>
    act(async () => {
      await client.subscriptions.acceptChanges(subscriptionId, {});
      onAccepted();
    });
  return (
    <Alert mt="md" color="orange" title="Tool definitions changed" data-testid={`changes-${name}`}>
      <Stack gap="sm">
        <Text size="sm">
          These tools changed since you subscribed. They are refused (409) until you accept the change: read what
          changed first — a description can carry instructions meant for your agents.
        </Text>
        {changes.map((c) => (
          <Stack key={c.tool_id} gap={4}>
            <Group gap="xs">
              <Text fw={600} ff="monospace">
                {c.tool}
              </Text>
              <Badge color={c.change === 'added' ? 'blue' : 'orange'}>{c.change}</Badge>
            </Group>
            <Table withTableBorder layout="fixed" aria-label={`Changes of ${c.tool}`}>
              <TableHead columns={['Path', 'Before', 'After']} />
              <Table.Tbody>
                {c.diff.map((op) => {
                  const path = String(op.path ?? '');
                  return (
                    <Table.Tr key={`${String(op.op)} ${path}`}>
                      <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                        {path || '/'}
                      </Table.Td>
                      <Table.Td>
                        <Value value={op.op === 'add' ? undefined : at(c.pinned_definition, path)} />
                      </Table.Td>
                      <Table.Td>
                        {op.op === 'remove' ? <Text c="dimmed">removed</Text> : <Value value={op.value} />}
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Stack>
        ))}
        <Group>
          <Button size="xs" color="orange" onClick={() => void accept()} aria-label={`Accept changes of ${name}`}>
            Accept changes
          </Button>
        </Group>
        <ProblemAlert error={error} />
      </Stack>
    </Alert>
  );
}
