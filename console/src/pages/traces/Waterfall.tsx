/**
 * A trace as a waterfall: one row per span, indented under its parent, its bar placed by start
 * time and sized by duration on the trace's time axis; a row's button opens its attributes,
 * events (e.g. a deployed handler's `log` lines) and links (a job's run to the request that
 * queued it). Spans come from `GET /v1/traces/{trace_id}` (docs/observability.md).
 */
import { Badge, Card, Code, Group, Stack, Table, Text, Title, UnstyledButton, VisuallyHidden } from '@mantine/core';
import { useState } from 'react';
import type { Result } from '../../api';

export type Trace = Result<'traces.get'>;
export type TraceSpan = Trace['spans'][number];

/** A span in waterfall order: depth-first from the roots, children by start time. */
export interface Row {
  span: TraceSpan;
  depth: number;
  /** Start after the trace's first span, ms. */
  offsetMs: number;
}

const KIND_COLOR: Record<string, string> = {
  server: 'var(--mantine-color-blue-6)',
  client: 'var(--mantine-color-teal-6)',
  producer: 'var(--mantine-color-orange-6)',
  consumer: 'var(--mantine-color-orange-6)',
  internal: 'var(--mantine-color-grape-6)',
};

/**
 * The rows of `spans` in waterfall order and the trace's extent (ms). A span whose parent is not
 * among `spans` (the caller's own span, or another account's) is a root.
 */
export function waterfallRows(spans: TraceSpan[]): { rows: Row[]; totalMs: number } {
  if (spans.length === 0) return { rows: [], totalMs: 0 };
  const start = (s: TraceSpan) => Date.parse(s.start_time);
  const t0 = Math.min(...spans.map(start));
  const end = Math.max(...spans.map((s) => start(s) + s.duration_ms));
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map<string | null, TraceSpan[]>();
  for (const s of spans) {
    const parent = s.parent_span_id && ids.has(s.parent_span_id) ? s.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  for (const list of children.values()) list.sort((a, b) => start(a) - start(b));
  const rows: Row[] = [];
  const seen = new Set<string>();
  const visit = (s: TraceSpan, depth: number) => {
    if (seen.has(s.span_id)) return;
    seen.add(s.span_id);
    rows.push({ span: s, depth, offsetMs: start(s) - t0 });
    for (const c of children.get(s.span_id) ?? []) visit(c, depth + 1);
  };
  for (const r of children.get(null) ?? []) visit(r, 0);
  return { rows, totalMs: Math.max(end - t0, 0.001) };
}

const fmtMs = (v: number) => (v >= 100 ? `${Math.round(v)} ms` : `${v.toFixed(v >= 10 ? 1 : 2)} ms`);

const value = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

export function Waterfall({ trace }: { trace: Trace }) {
  const { rows, totalMs } = waterfallRows(trace.spans);
  const [selected, setSelected] = useState<string | null>(null);
  const open = rows.find((r) => r.span.span_id === selected)?.span;
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {rows.length} spans over {fmtMs(totalMs)}
        {trace.dropped_spans ? ` · ${trace.dropped_spans} more not kept (TRACES_MAX_SPANS)` : ''}
      </Text>
      <Table data-testid="waterfall" layout="fixed" verticalSpacing={4}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th w="34%">Span</Table.Th>
            <Table.Th w="10%">Duration</Table.Th>
            <Table.Th w="9%">Status</Table.Th>
            <Table.Th>
              Timeline <VisuallyHidden>(bars by start and duration)</VisuallyHidden>
            </Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map(({ span: s, depth, offsetMs }) => {
            const left = (offsetMs / totalMs) * 100;
            const width = Math.max((s.duration_ms / totalMs) * 100, 0.3);
            const isOpen = s.span_id === selected;
            return (
              <Table.Tr
                key={s.span_id}
                data-testid="span-row"
                bg={isOpen ? 'var(--mantine-color-blue-light)' : undefined}
              >
                <Table.Td style={{ paddingLeft: `calc(${depth} * 1rem + 0.5rem)` }}>
                  <UnstyledButton
                    onClick={() => setSelected(isOpen ? null : s.span_id)}
                    aria-expanded={isOpen}
                    aria-controls="span-detail"
                    title={s.name}
                    style={{ maxWidth: '100%' }}
                  >
                    <Text size="sm" truncate ff="monospace">
                      {s.name}
                    </Text>
                  </UnstyledButton>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{fmtMs(s.duration_ms)}</Text>
                </Table.Td>
                <Table.Td>
                  <Badge size="sm" variant="light" color={s.status.code === 'error' ? 'red' : 'gray'}>
                    {s.status.code}
                  </Badge>
                </Table.Td>
                <Table.Td>
                  <div style={{ position: 'relative', height: 12 }} aria-hidden="true">
                    <div
                      style={{
                        position: 'absolute',
                        left: `${Math.min(left, 99.7)}%`,
                        width: `${Math.min(width, 100 - Math.min(left, 99.7))}%`,
                        top: 0,
                        bottom: 0,
                        borderRadius: 2,
                        background:
                          s.status.code === 'error'
                            ? 'var(--mantine-color-red-6)'
                            : (KIND_COLOR[s.kind] ?? KIND_COLOR.internal),
                      }}
                    />
                  </div>
                </Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
      {open ? <SpanDetail span={open} /> : null}
    </Stack>
  );
}

function SpanDetail({ span }: { span: TraceSpan }) {
  const attrs = Object.entries(span.attributes).sort(([a], [b]) => a.localeCompare(b));
  return (
    <Card withBorder id="span-detail" data-testid="span-detail" aria-label={`Span ${span.name}`}>
      <Stack gap="xs">
        <Title order={3} size="h4" ff="monospace">
          {span.name}
        </Title>
        <Group gap="xs">
          <Badge variant="outline">{span.kind}</Badge>
          <Badge variant="light" color={span.status.code === 'error' ? 'red' : 'gray'}>
            {span.status.code}
          </Badge>
          <Text size="sm">{fmtMs(span.duration_ms)}</Text>
          <Text size="sm" c="dimmed">
            span {span.span_id}
            {span.parent_span_id ? ` · parent ${span.parent_span_id}` : ''}
          </Text>
        </Group>
        {span.status.message ? <Text c="red">{span.status.message}</Text> : null}
        <Title order={4} size="h5">
          Attributes
        </Title>
        {attrs.length ? (
          <Table data-testid="span-attributes" layout="fixed">
            <Table.Tbody>
              {attrs.map(([k, v]) => (
                <Table.Tr key={k}>
                  <Table.Th w="35%" ff="monospace" fw={400}>
                    {k}
                  </Table.Th>
                  <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {value(v)}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        ) : (
          <Text c="dimmed" size="sm">
            None.
          </Text>
        )}
        {span.events.length ? (
          <>
            <Title order={4} size="h5">
              Events
            </Title>
            <Code block data-testid="span-events">
              {span.events
                .map(
                  (e) =>
                    `${e.time}  ${e.name}  ${Object.entries(e.attributes)
                      .map(([k, v]) => `${k}=${value(v)}`)
                      .join(' ')}`,
                )
                .join('\n')}
            </Code>
          </>
        ) : null}
        {span.links.length ? (
          <>
            <Title order={4} size="h5">
              Links
            </Title>
            {span.links.map((l) => (
              <Text key={`${l.trace_id}-${l.span_id}`} size="sm" ff="monospace">
                trace {l.trace_id} · span {l.span_id}
              </Text>
            ))}
          </>
        ) : null}
      </Stack>
    </Card>
  );
}
