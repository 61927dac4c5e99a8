/**
 * `connection.expired` from the real refresh path: a connection whose refresh token the upstream
 * (an oidc-provider authorization server on loopback) has revoked is marked expired by the next
 * execution, and the account's subscribed endpoint receives one signed `connection.expired`.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createUser } from '../../helpers/app.js';
import {
  connect,
  executeNotes,
  newSession,
  registerNotesService,
  setExpiry,
  setupConnections,
  storedConnection,
} from '../connections/fixture.js';
import { waitFor } from '../deployments/fixtures.js';
import { ofType, subscribed } from './receiver.js';

const f = await setupConnections({ WEBHOOK_RETRY_BASE_MS: '50' });

describe('connection.expired', () => {
  it('is delivered once when a refused refresh expires the connection', async () => {
    const user = await createUser(f.app);
    const rx = await subscribed(f.app, user, ['connection.expired']);
    const svc = await registerNotesService(f, user);
    const { started } = await connect(f, user, svc.name, `u-${randomBytes(4).toString('hex')}@notes.test`);
    const { refreshToken } = await storedConnection(f, started.connection_id);
    await f.up.revoke(refreshToken!);
    await setExpiry(f, started.connection_id, 5_000);
    const session = await newSession(f.app, user.headers);
    expect((await executeNotes(f.app, user.headers, session, svc.name)).statusCode).toBe(409);
    // A second call finds the connection already expired: no second event.
    expect((await executeNotes(f.app, user.headers, session, svc.name)).statusCode).toBe(409);
    await waitFor(async () => rx.got.length >= 1, 10_000, 'connection.expired');
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.bad).toEqual([]);
    expect(ofType(rx, 'connection.expired')).toHaveLength(1);
    expect(rx.got[0].data).toMatchObject({
      connection_id: started.connection_id,
      service_id: svc.id,
      status: 'expired',
    });
    expect(rx.got[0].data.reason).toMatch(/grant/i);
  }, 60_000);
});
