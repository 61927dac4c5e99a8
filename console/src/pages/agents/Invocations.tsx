/** Invoke the active version, and the runs (invocations) with each one's logs. */
import { Anchor, Badge, Button, Card, Code, Drawer, JsonInput, Stack, Table, Text, Title } from '@mantine/core';
import type { LogEvent } from '@agent-platform/sdk';
import { useEffect, useState } from 'react';
import { Link } from 'react-router-dom';
import { all, client, type Item, type Result } from '../../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';
import { LogLines } from './LogLines';

type Run = Item<'deployments.executions.list'>;
type Invocation = Result<'deployments.executions.get'>;

const STATUS_COLOR: Record<string, string> = {
  succeeded: 'green',
  failed: 'red',
  timed_out: 'red',
  running: 'blue',
  queued: 'gray',
};
const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);

export function InvocationsTab({ agentId }: { agentId: string }) {
  const runs = useLoad(() => all(client.deployments.executions(agentId, { limit: 20 }), 20), [agentId]);
  const [input, setInput] = useState('{}');
  const [last, setLast] = useState<Invocation | null>(null);
  const [open, setOpen] = useState<Run | null>(null);
  const { error, setError, act } = useAction();
  const invoke = () =>
    act(async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(input);
      } catch (e) {
        return setError(new Error(`The input is not valid JSON: ${(e as Error).message}`));
      }
      setLast((await client.deployments.invoke(agentId, { input: parsed })) as Invocation);
      runs.reload();
    });
  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Title order={3}>Invoke</Title>
          <JsonInput label="Input (JSON)" value={input} onChange={setInput} autosize minRows={1} />
          <Button onClick={() => void invoke()}>Invoke</Button>
          <ProblemAlert error={error} />
          {last ? <InvocationView inv={last} /> : null}
        </Stack>
      </Card>
      <Title order={3}>Runs</Title>
      <Section state={runs} empty={(d) => d.length === 0} emptyText="No runs yet.">
        {(d) => (
          <Table data-testid="runs">
            <TableHead
              columns={['When', 'Version', 'Trigger', 'Status', 'Duration', { hidden: 'Logs' }, { hidden: 'Trace' }]}
            />
            <Table.Tbody>
              {d.map((i) => (
                <Table.Tr key={i.id}>
                  <Table.Td>{fmtDate(i.created_at)}</Table.Td>
                  <Table.Td>v{i.version}</Table.Td>
                  <Table.Td>{i.trigger}</Table.Td>
                  <Table.Td>
                    <Badge color={STATUS_COLOR[i.status] ?? 'gray'}>{i.status}</Badge>
                  </Table.Td>
                  <Table.Td>{i.duration_ms ?? '—'} ms</Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="light" onClick={() => setOpen(i)} aria-label={`Logs of run ${i.id}`}>
                      Logs
                    </Button>
                  </Table.Td>
                  <Table.Td>
                    <TraceLink invocationId={i.id} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
      <Drawer
        opened={!!open}
        onClose={() => setOpen(null)}
        position="right"
        size="lg"
        title={open ? `Run ${open.id}` : ''}
      >
        {open ? <RunLogs agentId={agentId} run={open} /> : null}
      </Drawer>
    </Stack>
  );
}

/** One run's lines (`GET …/executions/{id}/logs`); followed live (SSE) until it ends when it is still running. */
function RunLogs({ agentId, run }: { agentId: string; run: Run }) {
  const [lines, setLines] = useState<LogEvent[]>([]);
  const [state, setState] = useState<'loading' | 'following' | 'done'>('loading');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    const follow = !FINISHED.has(run.status);
    setState(follow ? 'following' : 'loading');
    (async () => {
      for await (const l of client.deployments.logs(agentId, { executionId: run.id, follow, signal: abort.signal }))
        setLines((ls) => [...ls, l]);
      setState('done');
    })().catch((e) => !abort.signal.aborted && setError(e));
    return () => abort.abort();
  }, [agentId, run.id, run.status]);
  return (
    <Stack>
      <Text size="sm">
        {run.status} · v{run.version} · {run.trigger} · {fmtDate(run.created_at)}{' '}
        {state === 'following' ? '· following live' : ''}
      </Text>
      <ProblemAlert error={error} />
      {state === 'done' && lines.length === 0 ? (
        <Text c="dimmed">This run wrote no log lines.</Text>
      ) : (
        <LogLines lines={lines} testId="run-logs" label={`Logs of run ${run.id}`} />
      )}
    </Stack>
  );
}

function InvocationView({ inv }: { inv: Invocation }) {
  return (
    <Stack gap={4}>
      <Text size="sm">
        {inv.status} in {inv.duration_ms ?? '—'} ms (v{inv.version}, trigger {inv.trigger}) ·{' '}
        <TraceLink invocationId={inv.id} />
      </Text>
      {inv.error ? (
        <Text c="red">
          {inv.error.code}: {inv.error.message}
        </Text>
      ) : null}
      <Code block data-testid="invocation-output">
        {JSON.stringify(inv.output, null, 2)}
      </Code>
      {inv.logs.length ? <LogLines lines={inv.logs} testId="invocation-logs" label="Logs of this run" /> : null}
    </Stack>
  );
}

/** The run's trace waterfall (`/traces?invocation_id=…` opens the kept trace; pages/Traces.tsx). */
function TraceLink({ invocationId }: { invocationId: string }) {
  return (
    <Anchor
      component={Link}
      to={`/traces?invocation_id=${encodeURIComponent(invocationId)}`}
      size="sm"
      aria-label={`Trace of run ${invocationId}`}
    >
      Trace
    </Anchor>
  );
}
