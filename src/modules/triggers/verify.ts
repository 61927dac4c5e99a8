/**
 * Verification of an inbound delivery against its trigger's shared secret, one function per mode,
 * each over the raw request bytes (never a re-serialised body):
 *
 * - `standard_webhooks`: the `standardwebhooks` package (Standard Webhooks spec: HMAC-SHA256 of
 *   `id.timestamp.body`, `webhook-signature: v1,<base64>`, timestamps within 5 minutes).
 * - `github`: `@octokit/webhooks-methods` (`X-Hub-Signature-256: sha256=<hex HMAC of the body>`).
 * - `stripe`: Stripe's scheme (`Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.body">`,
 *   5 minutes tolerance, any of several `v1` matches; stripe.com/docs/webhooks/signature). Done with
 *   node:crypto because Stripe's SDK (23 MB) would be bundled into the server for one HMAC; the
 *   tests sign with the SDK's own `generateTestHeaderString`.
 * - `bearer`: `Authorization: Bearer <secret>`, compared in constant time.
 *
 * Every failure is the same 401 (`invalid_credentials`): the answer never says which check failed.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { verify as verifyGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { AppError } from '../../http/errors.js';

export type TriggerMode = 'standard_webhooks' | 'github' | 'stripe' | 'bearer';

/** Seconds a signed timestamp may be away from now (Standard Webhooks and Stripe both use 5 minutes). */
export const TOLERANCE_S = 300;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function unverified(): AppError {
  return new AppError('invalid_credentials', 'The delivery could not be verified with this trigger’s secret');
}

function equalDigests(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** Stripe: true when one `v1` signature of `header` is the HMAC of `t.body` and `t` is within tolerance. */
export function verifyStripeSignature(
  secret: string,
  body: Buffer,
  sigHeader: string,
  nowS = Date.now() / 1000,
): boolean {
  const parts = sigHeader.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const v1 = parts.filter(([k, v]) => k === 'v1' && v).map(([, v]) => v);
  if (!t || !/^\d{1,12}$/.test(t) || !v1.length || Math.abs(nowS - Number(t)) > TOLERANCE_S) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return v1.some((sig) => equalDigests(sig, expected));
}

/**
 * Verify `body` with `headers` under `mode` and `secret`.
 * @returns the sender's delivery id when the mode has one (`webhook-id`, `X-GitHub-Delivery`, the
 *   Stripe event's `id`, or `Idempotency-Key` for bearer), else null
 * @throws AppError invalid_credentials (401) when the delivery is not proven
 */
export async function verifyDelivery(
  mode: TriggerMode,
  secret: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<string | null> {
  switch (mode) {
    case 'standard_webhooks': {
      const h = {
        'webhook-id': header(headers, 'webhook-id') ?? '',
        'webhook-timestamp': header(headers, 'webhook-timestamp') ?? '',
        'webhook-signature': header(headers, 'webhook-signature') ?? '',
      };
      try {
        new Webhook(secret).verify(body, h, { jsonParse: false });
      } catch {
        throw unverified();
      }
      return h['webhook-id'];
    }
    case 'github': {
      const sig = header(headers, 'x-hub-signature-256');
      if (!sig || !(await verifyGithub(secret, body.toString('utf8'), sig).catch(() => false))) throw unverified();
      return header(headers, 'x-github-delivery') ?? null;
    }
    case 'stripe': {
      const sig = header(headers, 'stripe-signature');
      if (!sig || !verifyStripeSignature(secret, body, sig)) throw unverified();
      try {
        const id = (JSON.parse(body.toString('utf8')) as { id?: unknown }).id;
        return typeof id === 'string' ? id : null;
      } catch {
        return null;
      }
    }
    case 'bearer': {
      const auth = header(headers, 'authorization') ?? '';
      const m = /^Bearer\s+(\S+)$/i.exec(auth);
      if (!m || !equalDigests(m[1], secret)) throw unverified();
      return header(headers, 'idempotency-key') ?? header(headers, 'webhook-id') ?? null;
    }
  }
}
