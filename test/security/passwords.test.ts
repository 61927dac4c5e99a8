/**
 * Common and context-specific passwords are refused at registration (NIST SP 800-63B §5.1.1.2,
 * issue 11 §4a): 400 `validation_failed` with a pointer to `/password`; nothing is stored.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { call, setupApp } from '../helpers/app.js';

const { app } = await setupApp();
const email = () => `pw-${randomBytes(6).toString('hex')}@example.test`;

describe('registration refuses common passwords', () => {
  it.each([
    ['a top-10 breached password', 'password'],
    ['a breached password in another case', 'QwErTy123'],
    ['a breached password written with full-width digits (NFKC)', 'iloveyou１２３'.normalize('NFC')],
    ['a long breached password', '1qaz2wsx3edc'],
  ])('%s → 400 validation_failed at /password, not stored', async (_what, password) => {
    const e = email();
    const { body, res } = await call(
      app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password } },
      400,
    );
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(body.code).toBe('validation_failed');
    expect(body.errors).toEqual([
      { in: 'body', pointer: '/password', message: expect.stringMatching(/common passwords/) },
    ]);
    // Not stored: the same email registers fine with a good password afterwards.
    await call(
      app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password: 'plum tractor ocean 42' } },
      201,
    );
  });

  it('refuses the email address or its name part as the password', async () => {
    const e = email();
    for (const password of [e, e.split('@')[0].toUpperCase()]) {
      const { body } = await call(app, { method: 'POST', url: '/auth/register', payload: { email: e, password } }, 400);
      expect(body.errors[0]).toMatchObject({ pointer: '/password', message: expect.stringMatching(/email address/) });
    }
  });

  it('accepts an uncommon passphrase and signs in with it', async () => {
    const e = email();
    await call(
      app,
      { method: 'POST', url: '/auth/register', payload: { email: e, password: 'violet anchor 7 mango' } },
      201,
    );
    await call(
      app,
      { method: 'POST', url: '/auth/login', payload: { email: e, password: 'violet anchor 7 mango' } },
      200,
    );
  });
});
