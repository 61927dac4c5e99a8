/**
 * The agent's recent log lines, then — while "Follow" is on — its runs' lines as they are written
 * (`GET /v2/agents/{id}/logs?follow=true`, Server-Sent Events read through the SDK).
 */
import { Badge, Button, Group, Stack, Switch, Text, Title } from '@mantine/core';
import type { LogEvent } from '@agent-platform/sdk';
import { useEffect, useState } from 'react';
import { client } from '../../api';
import { ProblemAlert } from '../../ui';
import { LogLines } from './LogLines';

/** Lines kept in the page; older ones scroll out. */
const MAX_LINES = 500;

export function LiveLogsTab({ agentId }: { agentId: string }) {
  const [lines, setLines] = useState<LogEvent[]>([]);
  const [follow, setFollow] = useState(true);
  const [state, setState] = useState<'loading' | 'live' | 'stopped'>('loading');
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const abort = new AbortController();
    const add = (l: LogEvent) =>
      setLines((ls) => (ls.length >= MAX_LINES ? [...ls.slice(1 - MAX_LINES), l] : [...ls, l]));
    setError(null);
    (async () => {
      const recent: LogEvent[] = [];
      for await (const l of client.deployments.logs(agentId, { signal: abort.signal })) recent.push(l);
      if (abort.signal.aborted) return;
      setLines(recent.slice(-MAX_LINES));
      if (!follow) return setState('stopped');
      setState('live');
      for await (const l of client.deployments.logs(agentId, { follow: true, signal: abort.signal })) add(l);
      if (!abort.signal.aborted) setState('stopped');
    })().catch((e) => {
      if (abort.signal.aborted) return;
      setError(e);
      setState('stopped');
    });
    return () => abort.abort();
  }, [agentId, follow]);

  return (
    <Stack>
      <Group justify="space-between">
        <Group gap="xs">
          <Title order={3}>Logs</Title>
          <Badge color={state === 'live' ? 'green' : 'gray'} data-testid="logs-state">
            {state === 'live' ? 'live' : state === 'loading' ? 'loading' : 'not following'}
          </Badge>
        </Group>
        <Group>
          <Switch label="Follow" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
          <Button size="xs" variant="default" onClick={() => setLines([])}>
            Clear
          </Button>
        </Group>
      </Group>
      <ProblemAlert error={error} />
      {lines.length === 0 && state !== 'loading' ? (
        <Text c="dimmed">{state === 'live' ? 'Waiting for the agent to write something…' : 'No log lines.'}</Text>
      ) : null}
      <LogLines lines={lines} testId="live-logs" label="Agent logs" />
    </Stack>
  );
}
