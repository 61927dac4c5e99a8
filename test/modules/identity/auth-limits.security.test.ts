/**
 * Brute-force limits of the unauthenticated credential routes (issue 11 §1, NIST SP 800-63B §5.2.2):
 * sign-in attempts per email address whatever the IP, and requests per client IP.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, setupApp } from '../../helpers/app.js';

const { app } = await setupApp({ AUTH_ATTEMPTS_PER_ACCOUNT: '3', AUTH_ATTEMPTS_PER_IP: '6' });
const email = () => `lim-${randomBytes(5).toString('hex')}@example.test`;

describe('sign-in limits', () => {
  it('per account: the 4th attempt on one email is 429 with Retry-After, from any IP; another email is unaffected', async () => {
    const e = email();
    await call(
      app,
      {
        method: 'POST',
        url: '/auth/register',
        payload: { email: e, password: 'correct horse battery' },
        remoteAddress: '198.51.100.1',
      },
      201,
    );
    for (let i = 0; i < 3; i++) {
      await call(
        app,
        {
          method: 'POST',
          url: '/auth/login',
          payload: { email: e, password: `wrong-${i}-guess` },
          remoteAddress: `198.51.100.${10 + i}`,
        },
        401,
      );
    }
    const res = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { email: e.toUpperCase(), password: 'correct horse battery' },
      remoteAddress: '198.51.100.20',
    });
    expect(res.statusCode).toBe(429);
    expect(res.json().code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    await call(
      app,
      {
        method: 'POST',
        url: '/auth/login',
        payload: { email: email(), password: 'whatever pw' },
        remoteAddress: '198.51.100.21',
      },
      401,
    );
  });

  it('per IP: one client cannot spray many emails or registrations', async () => {
    const ip = '203.0.113.99';
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push(
        (
          await app.inject({
            method: 'POST',
            url: '/auth/login',
            payload: { email: email(), password: 'spray pw 1' },
            remoteAddress: ip,
          })
        ).statusCode,
      );
    expect(statuses.slice(0, 6).every((s) => s === 401)).toBe(true);
    expect(statuses[6]).toBe(429);
    // Another IP is not affected.
    await call(
      app,
      {
        method: 'POST',
        url: '/auth/login',
        payload: { email: email(), password: 'spray pw 1' },
        remoteAddress: '203.0.113.100',
      },
      401,
    );
  });

  it('unknown and known emails answer alike (same code and detail)', async () => {
    const e = email();
    await call(
      app,
      {
        method: 'POST',
        url: '/auth/register',
        payload: { email: e, password: 'correct horse battery' },
        remoteAddress: '192.0.2.1',
      },
      201,
    );
    const known = await call(
      app,
      {
        method: 'POST',
        url: '/auth/login',
        payload: { email: e, password: 'wrong password' },
        remoteAddress: '192.0.2.2',
      },
      401,
    );
    const unknown = await call(
      app,
      {
        method: 'POST',
        url: '/auth/login',
        payload: { email: email(), password: 'wrong password' },
        remoteAddress: '192.0.2.3',
      },
      401,
    );
    expect(unknown.body.code).toBe(known.body.code);
    expect(unknown.body.detail).toBe(known.body.detail);
  });
});
