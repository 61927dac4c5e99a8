/** TypeBox schemas of the admin routes. */
import { Type } from 'typebox';

export const RoleSchema = Type.Union([
  Type.Literal('user'),
  Type.Literal('pro'),
  Type.Literal('enterprise'),
  Type.Literal('admin'),
]);

export const SetRolesBody = Type.Object(
  {
    roles: Type.Array(RoleSchema, {
      minItems: 1,
      maxItems: 4,
      uniqueItems: true,
      description: 'the complete new role list (replaces the old one)',
    }),
  },
  { additionalProperties: false },
);

export const UserIdParams = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: 300,
    description:
      'the user as the API shows it (`user_id`: `<provider>|<id>`, e.g. `agent-platform|usr_…`, URL-encoded as `agent-platform%7Cusr_…`) or the bare platform id (`usr_…`)',
    examples: ['agent-platform%7Cusr_01JD8Z3X9Q2W4E6R8T0Y2U4I6O', 'usr_01JD8Z3X9Q2W4E6R8T0Y2U4I6O'],
  }),
});
