/**
 * Issue 18: `AuthRegistry.knownPrincipal` answers a request from memory only for the very token a
 * resolver verified before — "Bearer " and that token, exactly. The routing cache is keyed by the
 * token's last 32 characters, so a forged token sharing that tail (and its length) must miss and
 * go to full verification.
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { AuthRegistry, type AgentPrincipal, type JwtResolver } from '../../../src/http/auth.js';

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const signature = 'S'.repeat(86);
const token = `${b64({ alg: 'RS256' })}.${b64({ sub: 'agt_1', n: 'aaaa' })}.${signature}`;
const principal: AgentPrincipal = {
  kind: 'agent',
  agentId: 'agt_1',
  ownerId: 'usr_1',
  roles: ['user'],
  clientId: 'c',
  scope: [],
};

function registry(): { auth: AuthRegistry; verified: string[] } {
  const verified: string[] = [];
  const auth = new AuthRegistry({ apiKeysEnabled: false });
  const resolver: JwtResolver = {
    name: 'test',
    accepts: (p) => p.sub === 'agt_1',
    resolve: async (t) => {
      if (t !== token) throw new Error('bad signature');
      verified.push(t);
      return principal;
    },
    resolveKnown: (t) => (t === token ? principal : undefined),
  };
  auth.addJwtResolver(resolver);
  return { auth, verified };
}

const request = (authorization: string, extra: Record<string, string> = {}) =>
  ({ headers: { authorization, ...extra } }) as unknown as FastifyRequest;

describe('known bearer tokens', () => {
  it('answers the verified token from memory, and nothing else', async () => {
    const { auth, verified } = registry();
    expect(auth.knownPrincipal(request(`Bearer ${token}`))).toBeUndefined();
    await expect(auth.authenticate(token)).resolves.toBe(principal);
    expect(verified).toHaveLength(1);
    // The same token, a fresh header string: answered without the resolver's verification.
    expect(auth.knownPrincipal(request(`Bearer ${token.split('').join('')}`))).toBe(principal);

    // Same length and same last 32 characters, other payload: a miss, never the cached principal.
    const forged = `${b64({ alg: 'RS256' })}.${b64({ sub: 'agt_1', n: 'bbbb' })}.${signature}`;
    expect(forged.length).toBe(token.length);
    expect(forged.slice(-32)).toBe(token.slice(-32));
    expect(auth.knownPrincipal(request(`Bearer ${forged}`))).toBeUndefined();
    await expect(auth.authenticate(forged)).rejects.toThrow('bad signature');

    // Anything but "Bearer " + the token exactly is left to the full path.
    expect(auth.knownPrincipal(request(`Bearer ${token} `))).toBeUndefined();
    expect(auth.knownPrincipal(request(`bearer ${token}`))).toBeUndefined();
    expect(auth.knownPrincipal(request(`Basic ${token}`))).toBeUndefined();
    expect(auth.knownPrincipal(request(`Bearer ${token}`, { 'x-api-key': 'apk_x' }))).toBeUndefined();
  });
});
