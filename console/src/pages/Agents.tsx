import { Badge, Button, Card, Code, FileInput, Group, NumberInput, Select, Stack, Table, Text, TextInput, Timeline, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { api, listAll } from '../api';
import { ProblemAlert, SecretOnce, Section, fmtDate, useAction, useLoad } from '../ui';

interface Agent {
  id: string;
  name: string;
  client_id: string;
  status: string;
}
interface Deployment {
  id: string;
  version: number;
  status: string;
  failure_reason: string | null;
  created_at: string;
}
interface Invocation {
  id: string;
  version: number;
  status: string;
  duration_ms: number | null;
  created_at: string;
  output?: unknown;
  logs?: Array<{ ts: string; stream: string; message: string }>;
  error?: { code: string; message: string } | null;
}

export function AgentsPage() {
  const agents = useLoad(() => listAll<Agent>('/v2/agents'));
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<{ id: string; value: string } | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const { error, act } = useAction();
  return (
    <Stack>
      <Title order={2}>Agents</Title>
      <Group align="end">
        <TextInput label="Agent name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <Button
          disabled={!name.trim()}
          onClick={() =>
            void act(async () => {
              const a = await api<Agent & { client_secret: string }>('POST', '/v2/agents', { name });
              setSecret({ id: a.client_id, value: a.client_secret });
              setName('');
              setSelected(a.id);
              agents.reload();
            })
          }
        >
          Create agent
        </Button>
      </Group>
      {secret ? <SecretOnce label={`Client secret of ${secret.id}`} value={secret.value} /> : null}
      <ProblemAlert error={error} />
      <Section state={agents} empty={(d) => d.length === 0}>
        {(d) => (
          <Select
            label="Agent"
            data={d.map((a) => ({ value: a.id, label: `${a.name} (${a.client_id})` }))}
            value={selected}
            onChange={setSelected}
            placeholder="Choose an agent"
          />
        )}
      </Section>
      {selected ? <AgentDetail key={selected} agentId={selected} onSecret={(v) => setSecret(v)} /> : null}
    </Stack>
  );
}

function AgentDetail({ agentId, onSecret }: { agentId: string; onSecret(s: { id: string; value: string }): void }) {
  const deployments = useLoad(() => listAll<Deployment>(`/v2/agents/${agentId}/deployments`, 50), [agentId]);
  const invocations = useLoad(() => listAll<Invocation>(`/v2/agents/${agentId}/executions`, 20), [agentId]);
  const memory = useLoad(() => listAll<{ key: string; value: unknown; etag?: string }>(`/v2/agents/${agentId}/memory`, 100), [agentId]);
  const [file, setFile] = useState<File | null>(null);
  const [grace, setGrace] = useState<number | string>(3600);
  const [input, setInput] = useState('{}');
  const [last, setLast] = useState<Invocation | null>(null);
  const { error, act } = useAction();
  const busy = deployments.data?.some((d) => d.status === 'preparing' || d.status === 'pending');
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(deployments.reload, 1000);
    return () => clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [busy]);
  const op = (path: string) => act(async () => void (await api('POST', `/v2/agents/${agentId}/deployments/${path}`), deployments.reload()));

  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Title order={3}>Deploy</Title>
          <FileInput label="Bundle (.tar.gz with index.js / index.mjs)" value={file} onChange={setFile} accept=".tgz,.gz,application/gzip" />
          <Group>
            <Button
              disabled={!file}
              onClick={() =>
                void act(async () => {
                  const form = new FormData();
                  form.append('artifact', file!, file!.name);
                  await api('POST', `/v2/agents/${agentId}/deploy`, undefined, { form });
                  deployments.reload();
                })
              }
            >
              Deploy
            </Button>
            <Button variant="light" onClick={() => void op('rollback')}>
              Roll back
            </Button>
            <Button variant="light" onClick={() => void op('stop')}>
              Stop
            </Button>
            <Button variant="light" onClick={() => void op('redeploy')}>
              Redeploy
            </Button>
          </Group>
          <Group align="end">
            <NumberInput label="Grace period for the old secret (s)" value={grace} onChange={setGrace} min={0} />
            <Button
              variant="default"
              onClick={() =>
                void act(async () => {
                  const a = await api<{ client_id: string; client_secret: string }>('POST', `/v2/agents/${agentId}/rotate-secret`, { grace_period_seconds: Number(grace) });
                  onSecret({ id: a.client_id, value: a.client_secret });
                })
              }
            >
              Rotate secret
            </Button>
          </Group>
          <ProblemAlert error={error} />
        </Stack>
      </Card>
      <Title order={3}>Deployments</Title>
      <Section state={deployments} empty={(d) => d.length === 0}>
        {(d) => (
          <Timeline active={-1} bulletSize={18}>
            {d.map((x) => (
              <Timeline.Item key={x.id} title={`v${x.version}`}>
                <Group gap="xs">
                  <Badge color={x.status === 'active' ? 'green' : x.status === 'failed' ? 'red' : 'gray'} data-testid={`deployment-v${x.version}`}>
                    {x.status}
                  </Badge>
                  <Text size="xs" c="dimmed">
                    {fmtDate(x.created_at)}
                  </Text>
                </Group>
                {x.failure_reason ? <Text size="xs" c="red">{x.failure_reason}</Text> : null}
              </Timeline.Item>
            ))}
          </Timeline>
        )}
      </Section>
      <Card withBorder>
        <Stack>
          <Title order={3}>Invoke</Title>
          <TextInput label="Input (JSON)" value={input} onChange={(e) => setInput(e.currentTarget.value)} />
          <Button
            onClick={() =>
              void act(async () => {
                setLast(await api<Invocation>('POST', `/v2/agents/${agentId}/invoke`, { input: JSON.parse(input) }));
                invocations.reload();
              })
            }
          >
            Invoke
          </Button>
          {last ? <InvocationView inv={last} /> : null}
        </Stack>
      </Card>
      <Title order={3}>Invocations</Title>
      <Section state={invocations} empty={(d) => d.length === 0}>
        {(d) => (
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Version</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Duration</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {d.map((i) => (
                <Table.Tr key={i.id}>
                  <Table.Td>{fmtDate(i.created_at)}</Table.Td>
                  <Table.Td>v{i.version}</Table.Td>
                  <Table.Td>{i.status}</Table.Td>
                  <Table.Td>{i.duration_ms ?? '—'} ms</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
      <Title order={3}>Key/value memory</Title>
      <Section state={memory} empty={(d) => d.length === 0}>
        {(d) => (
          <Table>
            <Table.Tbody>
              {d.map((e) => (
                <Table.Tr key={e.key}>
                  <Table.Td ff="monospace">{e.key}</Table.Td>
                  <Table.Td>
                    <Code>{JSON.stringify(e.value)}</Code>
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

function InvocationView({ inv }: { inv: Invocation }) {
  return (
    <Stack gap={4}>
      <Text size="sm">
        {inv.status} in {inv.duration_ms ?? '—'} ms (v{inv.version})
      </Text>
      {inv.error ? <Text c="red">{inv.error.code}: {inv.error.message}</Text> : null}
      <Code block data-testid="invocation-output">
        {JSON.stringify(inv.output, null, 2)}
      </Code>
      {inv.logs?.length ? (
        <Code block>
          {inv.logs.map((l) => `${l.ts} ${l.stream} ${l.message}`).join('\n')}
        </Code>
      ) : null}
    </Stack>
  );
}
