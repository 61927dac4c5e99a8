/**
 * Database-backed storage for the embedded OpenID Provider (oidc-provider's `Adapter` interface,
 * one instance per model: Session, Interaction, Grant, AuthorizationCode, RefreshToken, …).
 * Rows live in `oidc_payloads` keyed by (model, id), so the provider's state survives restarts and
 * is shared by every instance behind a load balancer.
 */
import { and, eq, lt, sql } from 'drizzle-orm';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Db } from '../../db/client.js';
import { oidcPayloads } from '../../db/schema/index.js';

/** Adapter for one oidc-provider model. */
export class DbAdapter implements Adapter {
  constructor(
    private readonly db: Db,
    private readonly model: string,
  ) {}

  private where(id: string) {
    return and(eq(oidcPayloads.model, this.model), eq(oidcPayloads.id, id));
  }

  /** Insert or replace `payload`; `expiresIn` is in seconds (undefined → no expiry). */
  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const row = {
      model: this.model,
      id,
      payload: payload as Record<string, unknown>,
      grantId: payload.grantId ?? null,
      userCode: payload.userCode ?? null,
      uid: payload.uid ?? null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      consumedAt: null,
    };
    await this.db
      .insert(oidcPayloads)
      .values(row)
      .onConflictDoUpdate({
        target: [oidcPayloads.model, oidcPayloads.id],
        set: {
          payload: row.payload,
          grantId: row.grantId,
          userCode: row.userCode,
          uid: row.uid,
          expiresAt: row.expiresAt,
          consumedAt: null,
        },
      });
  }

  private async findBy(cond: ReturnType<typeof eq>): Promise<AdapterPayload | undefined> {
    const [row] = await this.db
      .select()
      .from(oidcPayloads)
      .where(and(eq(oidcPayloads.model, this.model), cond))
      .limit(1);
    if (!row) return undefined;
    if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return undefined;
    return {
      ...(row.payload as AdapterPayload),
      ...(row.consumedAt ? { consumed: Math.floor(row.consumedAt.getTime() / 1000) } : {}),
    };
  }

  find(id: string): Promise<AdapterPayload | undefined> {
    return this.findBy(eq(oidcPayloads.id, id));
  }

  findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.findBy(eq(oidcPayloads.uid, uid));
  }

  findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.findBy(eq(oidcPayloads.userCode, userCode));
  }

  /** Mark a single-use artefact (authorization code, rotated refresh token) as used. */
  async consume(id: string): Promise<void> {
    await this.db.update(oidcPayloads).set({ consumedAt: new Date() }).where(this.where(id));
  }

  async destroy(id: string): Promise<void> {
    await this.db.delete(oidcPayloads).where(this.where(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db
      .delete(oidcPayloads)
      .where(and(eq(oidcPayloads.model, this.model), eq(oidcPayloads.grantId, grantId)));
  }
}

/** Delete provider rows that expired more than `graceSeconds` ago. Returns the number deleted. */
export async function purgeExpiredPayloads(db: Db, graceSeconds = 3600): Promise<number> {
  const rows = await db
    .delete(oidcPayloads)
    .where(lt(oidcPayloads.expiresAt, sql`now() - make_interval(secs => ${graceSeconds})`))
    .returning({ id: oidcPayloads.id });
  return rows.length;
}
