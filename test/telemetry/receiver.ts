/** Shared by the telemetry tests: a real OTLP/HTTP receiver (JSON encoding, `http/json`). */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type OtlpAttributes = Array<{ key: string; value: Record<string, unknown> }>;

/** A span as OTLP/JSON encodes it (`ExportTraceServiceRequest.resourceSpans[].scopeSpans[].spans[]`). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: OtlpAttributes;
  events?: Array<{ name: string; attributes: OtlpAttributes }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

/** A listening receiver: `url` is the OTLP endpoint; `spans` and `metrics` fill as exports arrive. */
export interface OtlpReceiver {
  url: string;
  spans: OtlpSpan[];
  /** Raw `ExportMetricsServiceRequest` bodies posted to /v1/metrics. */
  metrics: unknown[];
  close(): Promise<void>;
}

/** Start a minimal OTLP/HTTP collector on a free loopback port: decodes JSON bodies at /v1/traces and /v1/metrics. */
export async function startReceiver(): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const metrics: unknown[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (req.url === '/v1/traces')
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push(s);
      else if (req.url === '/v1/metrics') metrics.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, spans, metrics, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The value of attribute `key` of `s` (whichever of stringValue/intValue/… it has), or undefined. */
export function attr(s: OtlpSpan, key: string): unknown {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
}
