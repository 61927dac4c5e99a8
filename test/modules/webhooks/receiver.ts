/**
 * A webhook receiver on loopback for the outbound webhook tests: verifies every delivery with the
 * endpoint's secret (`standardwebhooks`), keeps the verified events and the refusals, and a helper
 * that subscribes one for a user through the API.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll } from 'vitest';
import { call, type TestUser } from '../../helpers/app.js';

/** One verified delivery: the event and its `webhook-id`. */
export interface Received {
  type: string;
  data: Record<string, any>;
  id: string;
}

/** A receiver verifying with `state.secret` (set once the endpoint exists); closed after the file. */
export async function receiver() {
  const got: Received[] = [];
  const bad: string[] = [];
  const state = { secret: '' };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      try {
        const ev = new Webhook(state.secret).verify(body, {
          'webhook-id': String(req.headers['webhook-id']),
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        }) as { type: string; data: Record<string, any> };
        got.push({ ...ev, id: String(req.headers['webhook-id']) });
        res.writeHead(204).end();
      } catch (err) {
        bad.push((err as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, bad, state };
}

/** A receiver subscribed to `events` for `user` (POST /v2/webhooks). */
export async function subscribed(app: FastifyInstance, user: TestUser, events: string[]) {
  const rx = await receiver();
  const { body } = await call(
    app,
    { method: 'POST', url: '/v2/webhooks', headers: user.headers, payload: { url: rx.url, events } },
    201,
  );
  rx.state.secret = body.secret;
  return rx;
}

/** The received events of `type`. */
export const ofType = (rx: { got: Received[] }, type: string) => rx.got.filter((g) => g.type === type);
