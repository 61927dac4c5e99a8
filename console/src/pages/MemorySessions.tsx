/** A session's summary (`/memory/sessions/{id}`, rebuilt on demand) and its timeline of executions, memories and summaries. */
import { Anchor, Badge, Button, Card, Group, List, Select, Stack, Text, Timeline, Title } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router-dom';
import { AgentPlatformError, all, client, type Item } from '../api';
import { ProblemAlert, Section, fmtDate, plural, useAction, useLoad } from '../ui';

type Event = Item<'memory.sessionTimeline'>;

export function MemorySessions() {
  const sessions = useLoad(() => all(client.sessions.list({ limit: 100 }), 100));
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <Stack>
      <Section
        state={sessions}
        empty={(d) => d.length === 0}
        emptyText="No sessions yet: running a tool in the marketplace starts one."
      >
        {(d) => (
          <Select
            label="Session"
            placeholder="Choose a session"
            searchable
            data={d.map((s) => ({
              value: s.id,
              label: `${s.name ?? s.id} · ${plural(s.execution_count, 'call')} · ${s.status} · ${fmtDate(s.last_activity_at ?? s.created_at)}`,
            }))}
            value={selected}
            onChange={setSelected}
          />
        )}
      </Section>
      {selected ? <SessionDetail key={selected} sessionId={selected} /> : null}
    </Stack>
  );
}

/** Most timeline events the page reads (pages of 100). */
const TIMELINE_MAX = 300;

function SessionDetail({ sessionId }: { sessionId: string }) {
  const timeline = useLoad(
    () => all(client.memory.sessionTimeline(sessionId, { limit: 100 }), TIMELINE_MAX),
    [sessionId],
  );
  const events = timeline.data;
  // The summary is asked for only when the timeline shows one (or was cut short): "no summary yet"
  // is a 404 of `GET /memory/sessions/{id}`, which a browser logs as an error, and it is shown as
  // an empty state with the button that builds one.
  const summary = useLoad(async () => {
    if (!events) return new Promise<never>(() => undefined); // settles when the timeline has loaded (a new run)
    if (events.length < TIMELINE_MAX && !events.some((e) => e.type === 'summary')) return { s: null };
    return client.memory.sessionSummary(sessionId).then(
      (s) => ({ s }),
      (e) => (e instanceof AgentPlatformError && e.status === 404 ? { s: null } : Promise.reject(e)),
    );
  }, [sessionId, events]);
  const { error, act } = useAction();
  const summarize = () =>
    act(async () => {
      await client.memory.summarizeSession(sessionId);
      timeline.reload(); // the summary follows the new timeline
    });
  return (
    <Stack>
      <Card withBorder>
        <Stack>
          <Group justify="space-between">
            <Title order={3}>Summary</Title>
            <Button size="xs" onClick={() => void summarize()}>
              {summary.data?.s ? 'Summarize again' : 'Summarize'}
            </Button>
          </Group>
          <ProblemAlert error={error} />
          <Section
            state={summary}
            empty={(d) => d.s === null}
            emptyText="No summary yet: summarize the session to build one."
          >
            {({ s }) =>
              s && (
                <Stack gap="xs" data-testid="session-summary">
                  <Text>{s.summary}</Text>
                  {s.key_points.length ? (
                    <List size="sm">
                      {s.key_points.map((k, i) => (
                        <List.Item key={i}>{k}</List.Item>
                      ))}
                    </List>
                  ) : null}
                  <Text size="xs" c="dimmed">
                    {plural(s.execution_count, 'call')} ·{' '}
                    {s.tools_used.map((t) => `${t.tool_name} ×${t.calls}`).join(', ') || 'no tools'} · {s.generator}
                    {s.model ? ` (${s.model})` : ''} · {fmtDate(s.generated_at)}
                  </Text>
                </Stack>
              )
            }
          </Section>
        </Stack>
      </Card>
      <Title order={3}>Timeline</Title>
      <Section state={timeline} empty={(d) => d.length === 0} emptyText="Nothing happened in this session yet.">
        {(d) => (
          <Timeline active={-1} bulletSize={16} data-testid="session-timeline">
            {d.map((e) => (
              <Timeline.Item key={`${e.type}-${e.id}`} title={<TimelineTitle e={e} />}>
                <TimelineBody e={e} />
              </Timeline.Item>
            ))}
          </Timeline>
        )}
      </Section>
    </Stack>
  );
}

function TimelineTitle({ e }: { e: Event }) {
  const label =
    e.type === 'execution'
      ? (e.execution?.tool_name ?? 'call')
      : e.type === 'memory'
        ? `memory (${e.memory?.source ?? ''})`
        : 'summary';
  return (
    <Group gap="xs">
      <Text size="sm" fw={600}>
        {label}
      </Text>
      {e.execution ? (
        <Badge color={e.execution.status === 'succeeded' ? 'green' : 'red'}>{e.execution.status}</Badge>
      ) : null}
      <Text size="xs" c="dimmed">
        {fmtDate(e.at)}
      </Text>
    </Group>
  );
}

function TimelineBody({ e }: { e: Event }) {
  if (e.execution) {
    const x = e.execution;
    return (
      <Text size="sm" c="dimmed">
        {x.http_status ? `HTTP ${x.http_status} · ` : ''}
        {x.duration_ms} ms{x.error ? ` · ${x.error.code}: ${x.error.message}` : ''}
        {x.memory ? ` · ${x.memory}` : ''} ·{' '}
        <Anchor
          component={Link}
          underline="always"
          to={`/traces?execution_id=${encodeURIComponent(e.id)}`}
          aria-label={`Trace of ${e.id}`}
        >
          Trace
        </Anchor>
      </Text>
    );
  }
  if (e.memory) return <Text size="sm">{e.memory.content}</Text>;
  if (e.summary) return <Text size="sm">{e.summary.summary}</Text>;
  return null;
}
