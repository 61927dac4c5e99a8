/**
 * Session summaries (Zep-style). The default summariser is local and extractive: which
 * tools ran, what succeeded and failed, the most salient results and notes. When
 * `SUMMARY_LLM_URL` + `SUMMARY_LLM_MODEL` are set, an OpenAI-compatible chat model
 * (`POST /v1/chat/completions`) writes the prose from the same facts; if it fails, the extractive
 * summary is used and the answer says so (`generator: "extractive"`).
 */
import type { MemoryConfig } from '../../config.js';
import { AppError } from '../../http/errors.js';
import { describeExecution, type ExecutionFacts } from './sentences.js';
import { openAiEndpoint, postJson } from './embeddings.js';

/** One execution as the summariser sees it. */
export interface SummaryExecution extends ExecutionFacts {
  id: string;
  serviceId: string;
  toolId: string;
  createdAt: Date;
}

/** Input of a summary: the session, its executions (oldest first) and its explicit notes. */
export interface SummaryInput {
  sessionName: string | null;
  executions: SummaryExecution[];
  notes: Array<{ content: string; createdAt: Date }>;
}

/** Per-tool usage inside a session. */
export interface ToolUsed {
  service_id: string;
  tool_id: string;
  tool_name: string;
  calls: number;
  succeeded: number;
  failed: number;
}

/** A built summary. */
export interface BuiltSummary {
  summary: string;
  key_points: string[];
  tools_used: ToolUsed[];
  generator: 'extractive' | 'llm';
  model: string | null;
}

const MAX_KEY_POINTS = 6;

function toolsUsed(execs: SummaryExecution[]): ToolUsed[] {
  const byTool = new Map<string, ToolUsed>();
  for (const e of execs) {
    const t = byTool.get(e.toolId) ?? {
      service_id: e.serviceId,
      tool_id: e.toolId,
      tool_name: e.toolName,
      calls: 0,
      succeeded: 0,
      failed: 0,
    };
    t.calls++;
    if (e.status === 'succeeded') t.succeeded++;
    else t.failed++;
    t.tool_name = e.toolName;
    byTool.set(e.toolId, t);
  }
  return [...byTool.values()].sort((a, b) => b.calls - a.calls || a.tool_name.localeCompare(b.tool_name));
}

function span(execs: SummaryExecution[]): string {
  if (execs.length < 2) return '';
  const ms = execs[execs.length - 1].createdAt.getTime() - execs[0].createdAt.getTime();
  if (ms < 1000) return '';
  const min = Math.round(ms / 60000);
  return min >= 1 ? ` over ${min} minute${min === 1 ? '' : 's'}` : ` over ${Math.round(ms / 1000)} seconds`;
}

/**
 * Salience of each execution for key points: failures, the first call of each tool, the last call
 * and results with more content score higher. Returns indices, best first.
 */
function salientExecutions(execs: SummaryExecution[]): number[] {
  const seenTool = new Set<string>();
  const scored = execs.map((e, i) => {
    let s = 0;
    if (e.status === 'failed') s += 3;
    if (!seenTool.has(e.toolId)) s += 2;
    seenTool.add(e.toolId);
    if (i === execs.length - 1) s += 1;
    const out = e.output;
    if (out !== null && out !== undefined) s += Math.min(1, JSON.stringify(out).length / 400);
    return { i, s };
  });
  return scored.sort((a, b) => b.s - a.s || a.i - b.i).map((x) => x.i);
}

/** The local extractive summary (deterministic). */
export function extractiveSummary(input: SummaryInput): BuiltSummary {
  const execs = input.executions;
  const tools = toolsUsed(execs);
  const ok = execs.filter((e) => e.status === 'succeeded').length;
  const failed = execs.length - ok;
  const name = input.sessionName ? `Session "${input.sessionName}"` : 'The session';
  const parts: string[] = [];
  if (execs.length === 0) {
    parts.push(`${name} ran no tools.`);
  } else {
    const list = tools.map((t) => (t.calls > 1 ? `${t.tool_name} ×${t.calls}` : t.tool_name)).join(', ');
    parts.push(
      `${name} made ${execs.length} tool call${execs.length === 1 ? '' : 's'}${span(execs)} using ${tools.length} tool${tools.length === 1 ? '' : 's'} (${list}).`,
    );
    if (failed === 0) parts.push(`All ${ok === 1 ? 'of it' : ok} succeeded.`);
    else {
      const failures = tools
        .filter((t) => t.failed > 0)
        .map((t) => `${t.tool_name}${t.failed > 1 ? ` ×${t.failed}` : ''}`);
      parts.push(`${ok} succeeded and ${failed} failed (${failures.join(', ')}).`);
    }
  }
  if (input.notes.length)
    parts.push(`${input.notes.length} note${input.notes.length === 1 ? ' was' : 's were'} saved.`);

  const keyPoints: string[] = [];
  const picked = salientExecutions(execs).slice(0, Math.max(0, MAX_KEY_POINTS - Math.min(2, input.notes.length)));
  for (const i of picked.sort((a, b) => a - b)) keyPoints.push(describeExecution(execs[i]));
  for (const n of input.notes.slice(-2))
    keyPoints.push(`Note: ${n.content.length > 300 ? `${n.content.slice(0, 299)}…` : n.content}`);
  if (keyPoints.length) {
    const best = execs.length ? describeExecution(execs[salientExecutions(execs)[0]]) : keyPoints[0];
    parts.push(`Most notable: ${best}`);
  }
  return { summary: parts.join(' '), key_points: keyPoints, tools_used: tools, generator: 'extractive', model: null };
}

const SYSTEM_PROMPT =
  "You summarise an AI agent's work session for its future self. Answer with JSON only: " +
  '{"summary": "<3-5 sentences: goal, what was done, outcome, open problems>", "key_points": ["<at most 6 short facts worth remembering>"]}. ' +
  'Use only the facts given; do not invent results.';

/** Parse the chat model's answer: JSON `{summary, key_points}`, or prose with `-` bullets. */
export function parseLlmSummary(text: string): { summary: string; key_points: string[] } | null {
  const body = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  try {
    const j = JSON.parse(body) as { summary?: unknown; key_points?: unknown };
    if (typeof j.summary === 'string' && j.summary.trim()) {
      const kp = Array.isArray(j.key_points)
        ? j.key_points.filter((x): x is string => typeof x === 'string' && x.trim() !== '').slice(0, MAX_KEY_POINTS)
        : [];
      return { summary: j.summary.trim(), key_points: kp.map((s) => s.trim()) };
    }
  } catch {
    /* prose */
  }
  const lines = body
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const bullets = lines.filter((l) => /^[-*\u2022]\s+/.test(l)).map((l) => l.replace(/^[-*\u2022]\s+/, ''));
  const prose = lines.filter((l) => !/^[-*\u2022]\s+/.test(l)).join(' ');
  if (!prose && bullets.length === 0) return null;
  return { summary: prose || bullets.join(' '), key_points: bullets.slice(0, MAX_KEY_POINTS) };
}

/**
 * Summary by an OpenAI-compatible chat model, built from the extractive facts.
 * @throws AppError upstream_error / upstream_timeout when the model fails or answers nothing usable
 */
export async function llmSummary(
  cfg: MemoryConfig['summaryLlm'],
  input: SummaryInput,
  facts: BuiltSummary,
): Promise<BuiltSummary> {
  const lines = [
    `Session: ${input.sessionName ?? '(unnamed)'}`,
    `Overview: ${facts.summary}`,
    'Tool calls (oldest first):',
    ...input.executions.slice(-80).map((e) => `- ${describeExecution(e)}`),
    ...(input.notes.length ? ['Notes:', ...input.notes.slice(-20).map((n) => `- ${n.content.slice(0, 500)}`)] : []),
  ];
  const user = lines.join('\n').slice(0, 24_000);
  const body = (await postJson(
    openAiEndpoint(cfg.url!, 'chat/completions'),
    {
      model: cfg.model,
      temperature: 0.2,
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: user },
      ],
    },
    { apiKey: cfg.apiKey, timeoutMs: cfg.timeoutMs, what: 'The summary model', attempts: 2 },
  )) as { choices?: Array<{ message?: { content?: unknown } }> };
  const content = body?.choices?.[0]?.message?.content;
  const parsed = typeof content === 'string' ? parseLlmSummary(content) : null;
  if (!parsed) {
    throw new AppError('upstream_error', 'The summary model answered without a summary');
  }
  return {
    summary: parsed.summary.slice(0, 4000),
    key_points: parsed.key_points.length ? parsed.key_points.map((k) => k.slice(0, 500)) : facts.key_points,
    tools_used: facts.tools_used,
    generator: 'llm',
    model: cfg.model ?? null,
  };
}
