/** TypeBox schemas of the connections routes (docs/connections.md). */
import { Type, type Static } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

/** `POST /connections` */
export const CreateConnectionBody = Type.Object(
  {
    service: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'service id (svc_…) or name; its auth type must be oauth2',
    }),
    agent_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "one of the caller's agents: the connection is that agent's instead of the caller's own",
      }),
    ),
    return_to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description: 'where the browser goes after the callback: loopback, or on the AUTH_REDIRECT_URIS allow-list',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateConnectionInput = Static<typeof CreateConnectionBody>;

export const CreatedConnectionSchema = Type.Object({
  connection_id: Type.String(),
  authorization_url: Type.String({
    description:
      "the platform's page that starts the consent: open it in a browser signed in to the platform as the caller (sign in there first if needed); " +
      "it binds that browser to this flow and goes on to the upstream's consent page. Anyone else who opens it is refused",
  }),
  state: Type.String({ description: 'single-use, bound to the caller and this connection' }),
  expires_at: Type.String({
    format: 'date-time',
    description: 'the state (and so authorization_url) is good until then',
  }),
});

/** `POST /connections/authorize` */
export const AuthorizeConnectionBody = Type.Object(
  {
    state: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'the `state` of the flow (the `state` query parameter of `authorization_url`)',
    }),
  },
  { additionalProperties: false },
);

export const AuthorizedConnectionSchema = Type.Object({
  connection_id: Type.String(),
  authorization_url: Type.String({
    description:
      "the upstream's consent page: send this browser (the one that made this request, which now holds the flow's binding cookie) there",
  }),
  expires_at: Type.String({ format: 'date-time', description: 'the flow is good until then' }),
});

export const ConnectionStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('active'),
  Type.Literal('expired'),
  Type.Literal('revoked'),
  Type.Literal('error'),
]);

/** A connection as shown to its user: never a token. */
export const ConnectionSchema = Type.Object({
  id: Type.String(),
  service: Type.Object({ id: Type.String(), name: Type.String() }),
  agent_id: Nullable(Type.String()),
  status: ConnectionStatus,
  scopes: Type.Array(Type.String(), { description: 'scopes granted' }),
  expires_at: Nullable(Timestamp),
  last_used_at: Nullable(Timestamp),
  last_refreshed_at: Nullable(Timestamp),
  last_error: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ConnectionView = Static<typeof ConnectionSchema>;

export const ConnectionListQuery = Type.Object({
  ...PageQuery.properties,
  service: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'only connections to this service (id or name)' }),
  ),
});

/** `DELETE /connections/:id` */
export const DeletedConnectionSchema = Type.Object({
  id: Type.String(),
  status: Type.Literal('revoked'),
  upstream_revocation: Type.Union([Type.Literal('revoked'), Type.Literal('not_supported'), Type.Literal('failed')], {
    description:
      'RFC 7009 revocation at the upstream: done, the upstream has no revocation endpoint, or it failed (the connection is deleted anyway)',
  }),
});

/** The authorization response (RFC 6749 §4.1.2 / §4.1.2.1, RFC 9207 `iss`) the upstream redirects the browser with. */
export const CallbackQuery = Type.Object({
  state: Type.String({ minLength: 1, maxLength: 500 }),
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })),
  iss: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
  error: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  error_description: Type.Optional(Type.String({ maxLength: 2000 })),
  error_uri: Type.Optional(Type.String({ maxLength: 2000 })),
});
export type CallbackInput = Static<typeof CallbackQuery>;

/** Callback answer when the flow was started without `return_to`. */
export const CallbackResultSchema = Type.Object({
  connection_id: Type.String(),
  service: Type.String(),
  status: ConnectionStatus,
});
