import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { mayHoldNumber } from '../../../src/http/validation.js';
import { KeyParams, ConditionalHeaders } from '../../../src/modules/agent-memory/schemas.js';
import { PageQuery } from '../../../src/http/schemas.js';

describe('mayHoldNumber (which coerced request parts are walked for non-finite numbers)', () => {
  it('is false for string-only schemas', () => {
    expect(mayHoldNumber(KeyParams)).toBe(false);
    expect(mayHoldNumber(ConditionalHeaders)).toBe(false);
    expect(
      mayHoldNumber(Type.Object({ a: Type.Array(Type.String()), b: Type.Union([Type.Literal('x'), Type.Boolean()]) })),
    ).toBe(false);
  });

  it('is true wherever a number can appear, nested, in a type list, or behind a $ref', () => {
    expect(mayHoldNumber(PageQuery)).toBe(true);
    expect(mayHoldNumber(Type.Object({ a: Type.Optional(Type.Integer()) }))).toBe(true);
    expect(mayHoldNumber(Type.Object({ a: Type.Array(Type.Object({ b: Type.Number() })) }))).toBe(true);
    expect(mayHoldNumber({ type: 'object', properties: { a: { type: ['string', 'number'] } } })).toBe(true);
    expect(
      mayHoldNumber({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } }),
    ).toBe(true);
    expect(mayHoldNumber({ type: 'object', properties: { a: { $ref: 'Shared#' } } })).toBe(true);
  });
});
