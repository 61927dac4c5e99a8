/**
 * Real signatures for trigger tests, made with each sender's own library: `standardwebhooks`
 * (Webhook.sign), `@octokit/webhooks-methods` (sign, as GitHub's SDK does), Stripe's SDK
 * (`Stripe.webhooks.generateTestHeaderString`), and a bearer header.
 */
import { randomUUID } from 'node:crypto';
import { sign as signGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';

export type Mode = 'standard_webhooks' | 'github' | 'stripe' | 'bearer';

/** Headers that prove `body` under `mode` with `secret` (`at`: signing time, default now). */
export async function signedHeaders(
  mode: Mode,
  secret: string,
  body: string,
  opts: { id?: string; at?: Date } = {},
): Promise<Record<string, string>> {
  const id = opts.id ?? `msg_${randomUUID()}`;
  const at = opts.at ?? new Date();
  switch (mode) {
    case 'standard_webhooks':
      return {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, at, body),
      };
    case 'github':
      return {
        'x-hub-signature-256': await signGithub(secret, body),
        'x-github-delivery': id,
        'x-github-event': 'push',
      };
    case 'stripe':
      return {
        'stripe-signature': Stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret,
          timestamp: Math.floor(at.getTime() / 1000),
        }),
      };
    case 'bearer':
      return { authorization: `Bearer ${secret}`, 'idempotency-key': id };
  }
}

/** A JSON body as the mode's senders send it (Stripe: an event whose `id` is the delivery id). */
export function eventBody(mode: Mode, id = `evt_${randomUUID().replace(/-/g, '')}`): string {
  return mode === 'stripe'
    ? JSON.stringify({ id, object: 'event', type: 'invoice.paid', data: { object: { amount: 4200 } } })
    : JSON.stringify({ action: 'opened', number: 7, id });
}
