/**
 * Publish a service and call one of its tools. The script serves a tiny weather API on
 * 127.0.0.1 (with the domain-verification file), so the platform must admit loopback upstreams
 * (ALLOW_LOOPBACK_UPSTREAMS=on, as in development); point `base_url` at your own API otherwise.
 *   AGENT_PLATFORM_URL=… AGENT_PLATFORM_API_KEY=… npx tsx examples/publish-and-call.ts
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentPlatform } from '@agent-platform/sdk';

let verification = '';
const upstream = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname === '/.well-known/agent-platform-verification.txt') return res.end(verification);
  if (url.pathname === '/weather')
    return res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ city: url.searchParams.get('city'), temp_c: 18 }));
  res.writeHead(404).end();
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const baseUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const client = new AgentPlatform();
try {
  const svc = await client.services.register({
    name: `weather-${Date.now().toString(36)}`,
    description: 'Current weather by city',
    base_url: baseUrl,
    tools: [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        method: 'GET',
        path: '/weather',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ],
  });
  verification = (await client.publishing.verifyDomain(svc.id)).token; // served by the upstream above
  await client.publishing.verifyDomain(svc.id);
  await client.publishing.setVerificationConfig(svc.id, {
    tests: [{ tool: 'get_weather', arguments: { city: 'Oslo' } }],
  });
  let status = await client.publishing.publish(svc.id);
  while (status.status === 'pending_verification') {
    await new Promise((r) => setTimeout(r, 250));
    status = await client.publishing.verificationStatus(svc.id);
  }
  console.log(`service ${svc.name}: ${status.status}`);

  await client.subscriptions.create({ service_id: svc.id, plan: 'free' });
  const session = await client.sessions.create({});
  const result = await client.sessions.execute(session.id, {
    service: svc.name,
    tool: 'get_weather',
    arguments: { city: 'Lisbon' },
  });
  console.log('get_weather →', JSON.stringify(result.output));
  await client.sessions.close(session.id);
} finally {
  upstream.close();
}
