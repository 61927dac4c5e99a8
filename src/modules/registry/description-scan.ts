/**
 * Scanning tool descriptions for instructions aimed at the model ("tool poisoning", OWASP MCP Top
 * 10): a tool whose description tells the model what to do can turn a trusted tool against its
 * caller. No maintained npm library does this for tool metadata, so this is a small rule
 * list (ADR 0981): hidden text (HTML comments, `<IMPORTANT>`-style tags), zero-width and bidi
 * control characters, "ignore previous instructions"-style phrases, and instructions to read
 * files or secrets or to call other tools. Findings fail the publish checklist's `manifest_valid`
 * item (`revalidateService`), so an owner must fix them before publishing.
 */

/** One finding: which rule matched, and a short excerpt (control characters shown as `U+XXXX`). */
export interface DescriptionFinding {
  rule:
    | 'hidden_comment'
    | 'instruction_tag'
    | 'invisible_character'
    | 'override_phrase'
    | 'secret_access'
    | 'tool_redirect';
  excerpt: string;
}

const RULES: Array<[DescriptionFinding['rule'], RegExp]> = [
  ['hidden_comment', /<!--[\s\S]*?(-->|$)/],
  ['instruction_tag', /<\s*\/?\s*(important|system|instructions?|secret|hidden|admin|note_to_ai|assistant)\b[^>]*>/i],
  // Zero-width (U+200B–U+200F, U+2060–U+2064, U+FEFF), bidi embeddings/overrides/isolates, tag characters.
  ['invisible_character', /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/],
  [
    'override_phrase',
    /\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|other|system)\b.{0,20}\b(instructions?|prompts?|rules|messages?)\b|\bdo not (tell|inform|mention)\b.{0,20}\b(the )?user\b/i,
  ],
  [
    'secret_access',
    /(~\/\.ssh|id_rsa|\.env\b|\/etc\/passwd|\.aws\/credentials|mcp\.json|\b(read|cat|open|send|include|pass)\b.{0,40}\b(api[_ -]?keys?|secrets?|passwords?|private keys?|tokens?|credentials)\b)/i,
  ],
  [
    'tool_redirect',
    /\b(before|after|instead of)\b.{0,20}\b(using|calling|call|use)\b.{0,30}\b(this|any|the|other)\b.{0,10}\btools?\b/i,
  ],
];

/** The findings in one description (empty = clean). Pure; a few regular expressions per call. */
export function scanDescription(text: string): DescriptionFinding[] {
  const out: DescriptionFinding[] = [];
  for (const [rule, re] of RULES) {
    const m = re.exec(text);
    if (!m) continue;
    const start = Math.max(0, m.index - 10);
    const excerpt = text
      .slice(start, m.index + Math.min(m[0].length, 60))
      .replace(
        /[^\x20-\x7E\u00A0-\u200A\u2010-\u2029\u2030-\u205F]/g,
        (c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
      );
    out.push({ rule, excerpt });
  }
  return out;
}
