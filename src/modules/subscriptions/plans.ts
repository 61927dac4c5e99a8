/**
 * Plans and the role ladder of the subscriptions module: which plans a role may use, the limits of
 * a plan, and the SQL of the plan that applies to a subscription now (decision
 * "subscriptions/demotion", docs/adr/0208-subscriptions-demotion-the-limits-of-a-subscription.md).
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Plan, Role } from '../../config.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';

/** The plans from the lowest. */
export const PLAN_ORDER: readonly Plan[] = ['free', 'pro', 'enterprise'];

/**
 * The role ladder, the one definition of which plans a role may use (spec "Roles": pro users hold a
 * pro subscription, enterprise customers have unlimited access): the rungs from the top, each with
 * the roles that stand on it and the highest plan they allow; a caller with none of these roles
 * gets `free`. {@link plansFor}, the plan check and {@link effectivePlanSql} are all read from it.
 */
const ROLE_LADDER: readonly { roles: readonly Role[]; top: Plan }[] = [
  { roles: ['enterprise', 'admin'], top: 'enterprise' },
  { roles: ['pro'], top: 'pro' },
];
/** The plan of a caller on no rung of the ladder. */
export const BOTTOM_PLAN: Plan = PLAN_ORDER[0]!;

/** A role or plan name as an SQL string literal (names of the fixed `Role` and `Plan` unions, never input). */
export const lit = (name: Role | Plan): SQL => sql.raw(`'${name}'`);

/** Calls per window of `plan` (`config.quotas`; null = unlimited); an unknown plan gets the free limits. */
export function limitsOf(ctx: AppContext, plan: string): { day: number | null; month: number | null } {
  return ctx.config.quotas[plan as Plan] ?? ctx.config.quotas.free;
}

/** The highest plan `roles` allow (the top of the highest rung they stand on). */
function topPlanFor(roles: readonly Role[]): Plan {
  return ROLE_LADDER.find((rung) => rung.roles.some((r) => roles.includes(r)))?.top ?? BOTTOM_PLAN;
}

/**
 * The plans a caller with `roles` may choose, lowest first ({@link ROLE_LADDER}): `user` → free;
 * `pro` → free, pro; `enterprise`/`admin` → every plan.
 */
export function plansFor(roles: readonly Role[]): Plan[] {
  return PLAN_ORDER.slice(0, PLAN_ORDER.indexOf(topPlanFor(roles)) + 1);
}

/** @throws AppError forbidden when `roles` may not choose `plan` (the message names the lowest role that may). */
export function assertPlanAllowed(plan: Plan, roles: readonly Role[]): void {
  const allowed = plansFor(roles);
  if (!allowed.includes(plan)) {
    const needed = [...ROLE_LADDER].reverse().find((rung) => PLAN_ORDER.indexOf(rung.top) >= PLAN_ORDER.indexOf(plan))!
      .roles[0];
    throw new AppError(
      'forbidden',
      `The ${plan} plan needs the ${needed} role; your roles allow ${allowed.join(', ')}`,
    );
  }
}

/**
 * SQL of the plan whose limits apply (docs/adr/0208-subscriptions-demotion-the-limits-of-a-subscription.md): the
 * subscribed `plan`, capped by what the account's CURRENT `roles` allow ({@link plansFor}): a
 * user demoted from pro to user is counted on free, from enterprise to pro on pro. The stored plan
 * is kept, so restoring the role restores the quota. `plan` and `roles` are SQL expressions (text, text[]).
 */
export function effectivePlanSql(plan: SQL, roles: SQL): SQL {
  // `plan` capped at `top`: the plans above `top` become `top`.
  const capped = (top: Plan): SQL => {
    const above = PLAN_ORDER.slice(PLAN_ORDER.indexOf(top) + 1);
    if (above.length === 0) return plan;
    return sql`(case when ${plan} in (${sql.join(above.map(lit), sql`, `)}) then ${lit(top)} else ${plan} end)`;
  };
  const rungs = ROLE_LADDER.map(
    (rung) =>
      sql`when ${sql.join(
        rung.roles.map((r) => sql`${lit(r)} = any(${roles})`),
        sql` or `,
      )} then ${capped(rung.top)}`,
  );
  return sql`(case ${sql.join(rungs, sql` `)} else ${lit(BOTTOM_PLAN)} end)`;
}
