/**
 * The rules of Client ID Metadata Documents without a server: the client policy applied to a
 * resolved document, and the fetch budget's windows.
 */
import { describe, expect, it } from 'vitest';
import { FetchBudget, metadataDocumentClientProblem } from '../../../src/modules/identity/idp-cimd.js';

const publicClient = {
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  redirect_uris: ['http://127.0.0.1:8765/callback', 'https://app.example/cb'],
};

describe('metadataDocumentClientProblem', () => {
  it('accepts a public client and a private_key_jwt client with a jwks_uri', () => {
    expect(metadataDocumentClientProblem(publicClient)).toBeNull();
    expect(
      metadataDocumentClientProblem({
        ...publicClient,
        token_endpoint_auth_method: 'private_key_jwt',
        jwks_uri: 'https://app.example/jwks.json',
      }),
    ).toBeNull();
  });

  it('refuses secrets, inline keys, other grants, other response types and unsafe redirect URIs', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ token_endpoint_auth_method: undefined }, /token_endpoint_auth_method/],
      [{ token_endpoint_auth_method: 'client_secret_post' }, /token_endpoint_auth_method/],
      [{ token_endpoint_auth_method: 'private_key_jwt' }, /jwks_uri/],
      [{ jwks: { keys: [] } }, /jwks/],
      [{ grant_types: ['authorization_code', 'client_credentials'] }, /grant_types/],
      [{ response_types: ['code id_token'] }, /response_types/],
      [{ redirect_uris: [] }, /at least one/],
      [{ redirect_uris: ['http://app.example/cb'] }, /loopback/],
      [{ redirect_uris: ['https://app.example/cb#frag'] }, /fragment/],
    ];
    for (const [change, why] of cases) {
      expect(metadataDocumentClientProblem({ ...publicClient, ...change }), JSON.stringify(change)).toMatch(why);
    }
  });
});

describe('FetchBudget', () => {
  it('allows perKey per key and total in all per window, then resets', () => {
    const b = new FetchBudget(2, 3, 1000);
    expect(b.take('a', 0)).toBe(true);
    expect(b.take('a', 1)).toBe(true);
    expect(b.take('a', 2)).toBe(false);
    expect(b.take('b', 3)).toBe(true);
    expect(b.take('c', 4)).toBe(false); // the process-wide total is spent
    expect(b.take('a', 1000)).toBe(true); // a new window
    expect(b.take('c', 1001)).toBe(true);
  });
});
