/** TypeBox schemas of the identity routes (spec: "Identity provider configuration" … "Profile update"). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';
import { PICTURE_MAX_LENGTH, PICTURE_PATTERN } from './picture.js';

const RoleSchema = Type.Union([
  Type.Literal('user'),
  Type.Literal('pro'),
  Type.Literal('enterprise'),
  Type.Literal('admin'),
]);

export const AuthConfig = Type.Object({
  domain: Type.String({ description: 'host of the identity provider' }),
  clientId: Type.String(),
  audience: Type.String(),
  scope: Type.String(),
  issuer: Type.String(),
  authorization_endpoint: Type.Optional(Type.String()),
  token_endpoint: Type.Optional(Type.String()),
  jwks_uri: Type.Optional(Type.String()),
});

const RedirectUri = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'the callback address of the client (allow-list: AUTH_REDIRECT_URIS, default any loopback URI)',
});

export const LoginQuery = Type.Object({ redirect_uri: RedirectUri });

export const LoginStart = Type.Object({
  auth_url: Type.String({ description: 'authorization URL at the identity provider (`<issuer>/authorize?…`)' }),
  state: Type.String({ description: 'opaque anti-forgery value; single use, valid 10 minutes' }),
});

export const CallbackBody = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 2048, description: 'authorization code from the redirect' }),
    redirect_uri: RedirectUri,
    state: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'the state of GET /v1/auth/login (returned on the redirect too)',
    }),
    iss: Type.Optional(
      Type.String({ maxLength: 2048, description: 'the `iss` parameter of the redirect (RFC 9207), when present' }),
    ),
  },
  { additionalProperties: false },
);

/** Token set of the provider flows (callback, refresh of provider tokens): `refresh_token` needs `offline_access`. */
export const ProviderTokenSetSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.Optional(Type.String()),
  id_token: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
});

export const TokenSetSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  id_token: Type.String(),
  scope: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
});

export const ProfileSchema = Type.Object({
  user_id: Type.String(),
  email: Nullable(Type.String()),
  name: Nullable(Type.String()),
  picture: Nullable(Type.String()),
  roles: Type.Array(RoleSchema),
  preferences: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  subscription: Type.Object({ tier: Type.String(), valid_until: Nullable(Timestamp) }),
  test: Type.Boolean({
    description: 'true for accounts created by POST /auth/test (test tokens are issued for these only)',
  }),
});

const Email = Type.String({ format: 'email', maxLength: 254 });

export const RegisterBody = Type.Object(
  {
    email: Email,
    password: Type.String({ minLength: 8, maxLength: 256 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const LoginBody = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 256 }) },
  { additionalProperties: false },
);

export const TestTokenBody = Type.Object(
  {
    email: Type.Optional(Email),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    roles: Type.Optional(Type.Array(RoleSchema, { minItems: 1, maxItems: 4, uniqueItems: true })),
    expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400 })),
  },
  { additionalProperties: false },
);

export const RefreshBody = Type.Object(
  { refresh_token: Type.String({ minLength: 1, maxLength: 4096 }) },
  { additionalProperties: false },
);

export const ProfileUpdateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    picture: Type.Optional(
      Type.String({
        format: 'uri',
        pattern: PICTURE_PATTERN,
        maxLength: PICTURE_MAX_LENGTH,
        description: 'an http or https URL',
      }),
    ),
    preferences: Type.Optional(
      Type.Object(
        { theme: Type.Optional(Type.String({ maxLength: 50 })), notifications: Type.Optional(Type.Boolean()) },
        { additionalProperties: true, maxProperties: 50 },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ValidateResult = Type.Object({
  valid: Type.Boolean(),
  user_id: Type.Optional(Type.String()),
  email: Type.Optional(Nullable(Type.String())),
  roles: Type.Optional(Type.Array(Type.String())),
  expires_at: Type.Optional(Timestamp),
  code: Type.Optional(Type.String({ description: 'why the token is not valid: token_expired | invalid_token' })),
});
