/**
 * Where the accounts of `POST /auth/test` may live: the domains reserved for testing and
 * documentation (RFC 2606 §2–3, RFC 6761 §6.2–6.5), which no real person can receive mail at. A
 * test account anywhere else would squat a real address: its owner's registration would answer 409.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Role } from '../../config.js';
import type { Db } from '../../db/client.js';
import { newId } from '../../http/ids.js';
import { users } from '../../db/schema/index.js';
import { AppError } from '../../http/errors.js';

/** Top-level domains reserved by RFC 2606 §2 (and RFC 6761 §6.2–6.5). */
const RESERVED_TLDS = new Set(['test', 'example', 'invalid', 'localhost']);
/** Second-level domains reserved by RFC 2606 §3. */
const RESERVED_DOMAINS = new Set(['example.com', 'example.net', 'example.org']);

/**
 * True when the domain of `email` (`local@domain`, any case, an optional final dot) is, or is a
 * subdomain of, a reserved one: `*.test`, `*.example`, `*.invalid`, `*.localhost`,
 * `example.com`, `example.net`, `example.org`.
 */
export function isReservedTestEmail(email: string): boolean {
  const domain = email
    .slice(email.lastIndexOf('@') + 1)
    .toLowerCase()
    .replace(/\.$/, '');
  const labels = domain.split('.');
  return RESERVED_TLDS.has(labels[labels.length - 1]) || RESERVED_DOMAINS.has(labels.slice(-2).join('.'));
}

/**
 * @throws AppError validation_failed (400, pointer `/email`) when `email` is not in a reserved domain
 */
export function assertReservedTestEmail(email: string): void {
  if (isReservedTestEmail(email)) return;
  throw new AppError(
    'validation_failed',
    'Test accounts live in domains reserved for testing only (RFC 2606): *.test, *.example, *.invalid, *.localhost, example.com, example.net or example.org; register real addresses with POST /auth/register',
    {
      errors: [
        { in: 'body', pointer: '/email', message: 'must be in a domain reserved for testing (e.g. name@example.test)' },
      ],
    },
  );
}

/**
 * Give the address `email` back to its owner: a test account holding an address outside the
 * reserved domains (created before test accounts were confined to them) loses it — its email
 * becomes null, its data and tokens stay its own — so the owner's registration can proceed.
 * A no-op for reserved addresses and for accounts that are not test accounts.
 * @returns the id of the test account that held it, or undefined
 */
export async function releaseSquattedEmail(db: Db, email: string): Promise<string | undefined> {
  if (isReservedTestEmail(email)) return undefined;
  const [row] = await db
    .update(users)
    .set({ email: null, updatedAt: new Date() })
    .where(and(sql`lower(${users.email}) = ${email.toLowerCase()}`, eq(users.test, true)))
    .returning({ id: users.id });
  return row?.id;
}

/**
 * The test account of `input.email` (`POST /auth/test`), created when missing (name defaults to the
 * local part, roles to `['user']`); with `input.roles`, its roles are replaced. Only accounts this
 * endpoint created (`users.test`) are ever reused: the email of any other account, or one listed
 * in `adminEmails`, is refused, so a test token can never act as a real user.
 * `subjectFor`: the `user_id` (`<provider>|<id>`) of a new platform user id.
 * @throws AppError validation_failed (email outside the reserved domains), conflict (email of a
 *   non-test account)
 */
export async function provisionTestUser(
  db: Db,
  input: { email: string; name?: string; roles?: Role[] },
  adminEmails: readonly string[],
  subjectFor: (userId: string) => string,
): Promise<typeof users.$inferSelect> {
  const { email, roles } = input;
  assertReservedTestEmail(email);
  const taken = () =>
    new AppError(
      'conflict',
      'This email belongs to an account that was not created by POST /auth/test; test tokens are issued for test accounts only',
    );
  if (adminEmails.includes(email)) throw taken();
  const byEmail = async () => (await db.select().from(users).where(sql`lower(${users.email}) = ${email}`))[0];
  let user = await byEmail();
  if (!user) {
    const id = newId('usr');
    [user] = await db
      .insert(users)
      .values({
        id,
        subject: subjectFor(id),
        email,
        name: input.name ?? email.split('@')[0],
        roles: roles ?? ['user'],
        test: true,
      })
      .onConflictDoNothing()
      .returning();
    user ??= await byEmail();
    if (!user) throw new AppError('conflict', 'Could not create the test user');
  }
  if (!user.test) throw taken();
  if (roles) {
    [user] = await db
      .update(users)
      .set({ roles, updatedAt: new Date() })
      .where(and(eq(users.id, user.id), eq(users.test, true)))
      .returning();
    if (!user) throw taken();
  }
  return user;
}
