/**
 * A trace's waterfall (`/traces/:traceId`), and the way there from a run: `/traces?invocation_id=inv_…`
 * or `?execution_id=exe_…` asks `GET /v1/traces` for the run's kept trace and opens it. Traces are
 * kept by the server's process only while tracing is on (`TRACES_STORE=on` or an OTLP endpoint,
 * docs/observability.md); off, the platform says so (problem member `tracing: "off"`) and so does
 * this page.
 */
import { Alert, Button, Code, Group, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState, type ReactNode } from 'react';
import { useNavigate, useParams, useSearchParams } from 'react-router-dom';
import { AgentPlatformError, client } from '../api';
import { Section, useLoad, type Loaded } from '../ui';
import { Waterfall, type Trace } from './traces/Waterfall';

/** The data of an SDK `http` call, or its problem thrown as {@link AgentPlatformError}. */
async function data<D>(p: Promise<{ data?: D; error?: unknown; response: Response }>): Promise<D> {
  const { data: d, error, response } = await p;
  if (!response.ok || error !== undefined) throw AgentPlatformError.fromResponse(response, error);
  return d as D;
}

const getTrace = (traceId: string): Promise<Trace> =>
  data(client.http.GET('/v1/traces/{trace_id}', { params: { path: { trace_id: traceId } } }));

const findTraces = (query: { execution_id?: string; invocation_id?: string }) =>
  data(client.http.GET('/v1/traces', { params: { query } }));

/** True when the platform answered that it keeps no traces at all. */
const tracingOff = (e: unknown) =>
  e instanceof AgentPlatformError && (e.body as { tracing?: unknown } | null)?.tracing === 'off';

function TracingOff() {
  return (
    <Alert color="blue" title="Tracing is off on this server" role="status" data-testid="tracing-off">
      <Text size="sm">
        The platform keeps no traces unless an operator turns tracing on: <Code>TRACES_STORE=on</Code> keeps the last
        traces in the server for this page, <Code>OTEL_EXPORTER_OTLP_ENDPOINT</Code> also sends them to a collector.
      </Text>
    </Alert>
  );
}

/** `state` through {@link Section}, with tracing being off told apart from other problems. */
function TraceSection<T>({ state, children }: { state: Loaded<T>; children: (d: T) => ReactNode }) {
  if (tracingOff(state.error)) return <TracingOff />;
  return <Section state={state}>{children}</Section>;
}

export function TracesPage() {
  const { traceId } = useParams();
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const execution = search.get('execution_id') ?? undefined;
  const invocation = search.get('invocation_id') ?? undefined;
  const [typed, setTyped] = useState(traceId ?? '');
  useEffect(() => setTyped(traceId ?? ''), [traceId]);

  const one = useLoad(() => (traceId ? getTrace(traceId) : Promise.resolve(null)), [traceId]);
  const found = useLoad(
    () =>
      !traceId && (execution || invocation)
        ? findTraces({ execution_id: execution, invocation_id: invocation })
        : Promise.resolve(null),
    [traceId, execution, invocation],
  );
  const first = found.data?.data[0]?.trace_id;
  useEffect(() => {
    if (first) navigate(`/traces/${first}`, { replace: true });
  }, [first, navigate]);

  const run = invocation ?? execution;
  return (
    <Stack>
      <Title order={2}>Trace</Title>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const id = typed.trim().toLowerCase();
          if (/^[0-9a-f]{32}$/.test(id)) navigate(`/traces/${id}`);
        }}
      >
        <Group align="end">
          <TextInput
            label="Trace id"
            description="32 hexadecimal digits, as in a traceparent header"
            value={typed}
            onChange={(e) => setTyped(e.currentTarget.value)}
            w={420}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          />
          <Button type="submit" variant="default">
            Open
          </Button>
        </Group>
      </form>
      {traceId ? (
        <TraceSection state={one}>{(t) => (t ? <Waterfall trace={t} /> : null)}</TraceSection>
      ) : run ? (
        <TraceSection state={found}>
          {(f) =>
            f && f.data.length === 0 ? (
              <Text c="dimmed" data-testid="no-trace">
                No trace of {run} is kept: it ran while tracing was off or sampled out, or it is older than the traces
                the server keeps.
              </Text>
            ) : null
          }
        </TraceSection>
      ) : (
        <Text c="dimmed">Open a trace from a run of an agent, or by its id.</Text>
      )}
    </Stack>
  );
}
