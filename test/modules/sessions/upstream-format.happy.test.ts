/** Pure functions of the execution path: signature format and upstream body decoding. */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseBody } from '../../../src/upstream/request.js';
import { signRequest, signingPayload, userPseudonym } from '../../../src/upstream/signing.js';

describe('upstream signature', () => {
  it('signs "t.METHOD.path?query.sha256(body)" with HMAC-SHA256', () => {
    const body = '{"a":1}';
    expect(signingPayload(1700000000, 'post', '/v1/x?y=1', body)).toBe(
      `1700000000.POST./v1/x?y=1.${createHash('sha256').update(body).digest('hex')}`,
    );
    const expected = createHmac('sha256', 'whsec_test')
      .update(signingPayload(1700000000, 'POST', '/v1/x?y=1', body))
      .digest('hex');
    expect(signRequest('whsec_test', 'POST', '/v1/x?y=1', body, 1700000000)).toBe(`t=1700000000,v1=${expected}`);
    // An empty body hashes the empty string.
    expect(signingPayload(1, 'GET', '/p', undefined)).toBe(
      '1.GET./p.e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it('derives stable, per-secret pseudonyms that do not contain the user id', () => {
    const a = userPseudonym('secret-1', 'usr_abc');
    expect(a).toMatch(/^psu_[0-9a-f]{32}$/);
    expect(userPseudonym('secret-1', 'usr_abc')).toBe(a);
    expect(userPseudonym('secret-2', 'usr_abc')).not.toBe(a);
    expect(userPseudonym('secret-1', 'usr_abd')).not.toBe(a);
  });
});

describe('upstream body decoding', () => {
  it('parses declared JSON (incl. +json types), and refuses malformed JSON', () => {
    expect(parseBody('application/json; charset=utf-8', Buffer.from('{"x":[1]}'))).toEqual({
      ok: true,
      value: { x: [1] },
    });
    expect(parseBody('application/problem+json', Buffer.from('{"title":"t"}'))).toEqual({
      ok: true,
      value: { title: 't' },
    });
    expect(parseBody('application/json', Buffer.from('{oops'))).toMatchObject({ ok: false });
  });

  it('returns text for textual and untyped non-JSON bodies, base64 for binary, null for empty', () => {
    expect(parseBody('text/html', Buffer.from('<b>hi</b>'))).toEqual({ ok: true, value: '<b>hi</b>' });
    expect(parseBody('application/xml', Buffer.from('<a/>'))).toEqual({ ok: true, value: '<a/>' });
    expect(parseBody(undefined, Buffer.from('plain'))).toEqual({ ok: true, value: 'plain' });
    expect(parseBody(undefined, Buffer.from('[1,2]'))).toEqual({ ok: true, value: [1, 2] });
    expect(parseBody('image/png', Buffer.from([0x89, 0x50]))).toEqual({
      ok: true,
      value: { content_type: 'image/png', encoding: 'base64', data: 'iVA=' },
    });
    expect(parseBody('application/json', Buffer.alloc(0))).toEqual({ ok: true, value: null });
  });
});
