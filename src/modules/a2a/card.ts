/**
 * The A2A v1 agent card of a published agent (A2A Protocol Specification v1.0 §8, served at
 * `/a2a/agents/:agent_id/.well-known/agent-card.json`): name and version from the agent and its
 * active deployment, skills from the `a2a` section of the deployment's manifest (`agent.json` in
 * the bundle), one JSON-RPC interface at `/a2a/agents/:agent_id`, and security schemes pointing at
 * the platform's OAuth: the client_credentials token endpoint (`/auth/agent/token`) and bearer
 * tokens (user access tokens, API keys as `X-API-Key`, agent tokens).
 *
 * Manifest shape (all optional): `{ "a2a": { "description": "…", "skills": [{ "id", "name",
 * "description", "tags": [], "examples": [], "input_modes": [], "output_modes": [] }] } }`.
 * Entries without a string `id` and `name` are skipped; at most {@link MAX_SKILLS} are shown.
 */
import { A2A_PROTOCOL_VERSION, type AgentCard, type AgentSkill } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { AppContext } from '../../context.js';
import { deploymentArtifacts } from '../../db/schema/index.js';
import { inspectArtifact } from '../../sandbox/artifact.js';
import { activeDeployment, limitsOf, type DeploymentRow } from '../deployments/runtime.js';

/** Most skills a card lists. */
const MAX_SKILLS = 50;
/** Media types every published agent accepts and answers with. */
const MODES = ['text/plain', 'application/json'];

/** The `a2a` section of a deployment's manifest, as the card uses it. */
interface A2AManifest {
  description: string | null;
  skills: AgentSkill[];
}

/** Parsed manifests by artifact sha256 (an artifact never changes; parsing it means unpacking it). */
const manifests = new WeakMap<AppContext, LRUCache<string, A2AManifest>>();

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').slice(0, 20) : [];

/** The `a2a` section of `agentJson` (lenient: what does not fit is left out). */
export function parseManifest(agentJson: Record<string, unknown> | null): A2AManifest {
  const a2a = agentJson?.a2a;
  if (!a2a || typeof a2a !== 'object') return { description: null, skills: [] };
  const m = a2a as Record<string, unknown>;
  const skills: AgentSkill[] = [];
  for (const s of Array.isArray(m.skills) ? m.skills : []) {
    if (!s || typeof s !== 'object') continue;
    const o = s as Record<string, unknown>;
    if (typeof o.id !== 'string' || typeof o.name !== 'string') continue;
    skills.push({
      id: o.id.slice(0, 100),
      name: o.name.slice(0, 200),
      description: typeof o.description === 'string' ? o.description.slice(0, 2000) : '',
      tags: strings(o.tags),
      examples: strings(o.examples),
      inputModes: strings(o.input_modes),
      outputModes: strings(o.output_modes),
      securityRequirements: [],
    });
    if (skills.length >= MAX_SKILLS) break;
  }
  return { description: typeof m.description === 'string' ? m.description.slice(0, 2000) : null, skills };
}

/** The manifest section of deployment `d` (cached per artifact). */
async function manifestOf(ctx: AppContext, d: DeploymentRow): Promise<A2AManifest> {
  let cache = manifests.get(ctx);
  if (!cache) manifests.set(ctx, (cache = new LRUCache({ max: 200 })));
  const hit = cache.get(d.artifactSha256);
  if (hit) return hit;
  const [a] = await ctx.db
    .select({ data: deploymentArtifacts.data })
    .from(deploymentArtifacts)
    .where(eq(deploymentArtifacts.sha256, d.artifactSha256));
  let m: A2AManifest = { description: null, skills: [] };
  if (a) {
    try {
      m = parseManifest((await inspectArtifact(a.data, limitsOf(ctx))).agentJson);
    } catch (err) {
      ctx.log.warn({ err, deployment_id: d.id }, 'a2a: manifest of the deployment not readable');
    }
  }
  cache.set(d.artifactSha256, m);
  return m;
}

/** Base URL of agent `agentId`'s A2A face (no trailing slash). */
export function a2aUrl(ctx: AppContext, agentId: string): string {
  return `${ctx.config.publicUrl.replace(/\/+$/, '')}/a2a/agents/${encodeURIComponent(agentId)}`;
}

/**
 * The card of agent `agent` (published; the caller checked). Without an active deployment the
 * card still answers (version `0`, one generic skill); messages then fail until one is active.
 */
export async function buildCard(ctx: AppContext, agent: { id: string; name: string }): Promise<AgentCard> {
  const d = await activeDeployment(ctx, agent.id);
  const m = d ? await manifestOf(ctx, d) : { description: null, skills: [] };
  const base = ctx.config.publicUrl.replace(/\/+$/, '');
  const description = m.description ?? d?.description ?? `Deployed agent ${agent.name} on the Agent Platform`;
  const skills: AgentSkill[] = m.skills.length
    ? m.skills
    : [
        {
          id: 'invoke',
          name: agent.name,
          description: `${description} (the message's text and data parts are the handler's input)`,
          tags: ['agent-platform'],
          examples: [],
          inputModes: [],
          outputModes: [],
          securityRequirements: [],
        },
      ];
  return {
    name: agent.name,
    description,
    // v1.0 first (preferred), then its v0.3 mirror on the same URL (the A2A-Version header selects).
    supportedInterfaces: duplicateInterfacesForLegacy(
      [{ url: a2aUrl(ctx, agent.id), protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
      ['JSONRPC'],
    ),
    provider: { organization: 'Agent Platform', url: base },
    version: String(d?.version ?? 0),
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      platform_oauth: {
        scheme: {
          $case: 'oauth2SecurityScheme',
          value: {
            description:
              "The platform's OAuth 2.0 token endpoint: an agent's client_credentials (RFC 6749 §4.4) give a bearer token",
            flows: {
              flow: {
                $case: 'clientCredentials',
                value: { tokenUrl: `${base}/auth/agent/token`, refreshUrl: '', scopes: {} },
              },
            },
            oauth2MetadataUrl: '',
          },
        },
      },
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            description: "A platform access token of the agent's owner, or the agent's own token",
            scheme: 'Bearer',
            bearerFormat: 'JWT',
          },
        },
      },
      api_key: {
        scheme: {
          $case: 'apiKeySecurityScheme',
          value: { description: "An API key of the agent's owner", location: 'header', name: 'X-API-Key' },
        },
      },
    },
    securityRequirements: [
      { schemes: { bearer: { list: [] } } },
      { schemes: { platform_oauth: { list: [] } } },
      { schemes: { api_key: { list: [] } } },
    ],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills,
    signatures: [],
  };
}
