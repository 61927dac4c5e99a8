/** TypeBox schemas of the admin routes. */
import { Type } from 'typebox';

export const RoleSchema = Type.Union([Type.Literal('user'), Type.Literal('pro'), Type.Literal('enterprise'), Type.Literal('admin')]);

export const SetRolesBody = Type.Object(
  { roles: Type.Array(RoleSchema, { minItems: 1, maxItems: 4, uniqueItems: true, description: 'the complete new role list (replaces the old one)' }) },
  { additionalProperties: false },
);

export const UserIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, description: 'platform user id (`usr_…`)' }) });
