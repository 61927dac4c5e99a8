/**
 * The words people use for what an API operation does, and the words API descriptions use for it
 * (plain-language tool search). A user asks to "stop" a run, "write" a comment, "find"
 * repositories or get the "newest" release; the operations say cancel, create, search, latest.
 *
 * Source: the standard methods of Google's API Improvement Proposals (AIP-130 ff.: Get, List,
 * Create, Update, Delete, plus the common custom methods Cancel, Search, Start/Run, Import/Export,
 * Upload/Download) — the verbs an API catalog's operations are named with — each with its everyday
 * English equivalents (WordNet 3.0 synonyms of the verb where they fit the API sense). Not a
 * domain thesaurus: no word of one product's vocabulary (no "fork", "issue", "release").
 *
 * Each set is symmetric: any of its words stands for all of them. A word may sit in several sets
 * (none does here). Words are base forms; {@link synonymsOf} finds them for inflected ones.
 */
export const SYNONYM_SETS: readonly (readonly string[])[] = [
  // Create (AIP-133)
  ['create', 'add', 'new', 'make', 'open', 'write', 'post', 'submit', 'insert', 'register', 'store', 'save'],
  // Get (AIP-131)
  ['get', 'fetch', 'retrieve', 'read', 'show', 'view', 'see', 'display'],
  // List (AIP-132)
  ['list', 'enumerate', 'browse'],
  // Update (AIP-134)
  ['update', 'edit', 'change', 'modify', 'set', 'rename', 'replace'],
  // Delete (AIP-135)
  ['delete', 'remove', 'erase', 'destroy', 'discard'],
  // Search (a custom method, AIP-136)
  ['search', 'find', 'lookup', 'query', 'look'],
  // Cancel (a custom method; long-running operations, AIP-151)
  ['cancel', 'stop', 'abort', 'halt', 'terminate', 'kill'],
  // Start / run
  ['start', 'run', 'trigger', 'launch', 'execute', 'begin'],
  // Import / export, upload / download
  ['download', 'export'],
  ['upload', 'import'],
  // Recency (AIP-132 ordering: the most recent first)
  ['latest', 'newest', 'recent', 'last'],
];

/**
 * Words software names abbreviate (`repos_list`, `orgs_get`, `app_config`): a word and its
 * abbreviation mean the same, so either finds the other even when every word is required.
 */
export const ABBREVIATIONS: readonly (readonly string[])[] = [
  ['repository', 'repo'],
  ['organization', 'organisation', 'org'],
  ['application', 'app'],
  ['configuration', 'config'],
  ['environment', 'env'],
  ['authentication', 'auth'],
  ['authorization', 'authorisation', 'authz'],
  ['information', 'info'],
  ['administrator', 'admin'],
  ['directory', 'dir'],
  ['message', 'msg'],
  ['parameter', 'param'],
  ['statistics', 'stats'],
  ['specification', 'spec'],
];

/** Word → the other words of every set it belongs to (lower case, unstemmed). */
function symmetric(sets: readonly (readonly string[])[]): ReadonlyMap<string, readonly string[]> {
  const map = new Map<string, Set<string>>();
  for (const set of sets) {
    for (const w of set) {
      const others = map.get(w) ?? new Set<string>();
      for (const o of set) if (o !== w) others.add(o);
      map.set(w, others);
    }
  }
  return new Map([...map].map(([w, s]) => [w, [...s]]));
}

/** {@link SYNONYM_SETS} by word. */
export const SYNONYMS = symmetric(SYNONYM_SETS);
/** {@link ABBREVIATIONS} by word. */
export const EQUIVALENTS = symmetric(ABBREVIATIONS);

/**
 * The synonyms of a typed word: of the word itself, else of its base form with a regular English
 * inflection taken off ("changed" → change, "running" → run, "stops" → stop, "newest" stays).
 * Empty when the word is in no set.
 */
export function synonymsOf(word: string, table: ReadonlyMap<string, readonly string[]> = SYNONYMS): readonly string[] {
  for (const base of baseForms(word)) {
    const found = table.get(base);
    if (found) return found;
  }
  return [];
}

/** The abbreviations or full forms of a typed word ({@link ABBREVIATIONS}; "repos" → repository). */
export function equivalentsOf(word: string): readonly string[] {
  return synonymsOf(word, EQUIVALENTS);
}

/** The word, then candidate base forms for -s, -es, -ed, -d, -ing (with a doubled consonant or a dropped e). */
function baseForms(word: string): string[] {
  const out = [word];
  for (const [suffix, keep] of [
    ['ing', 3],
    ['ed', 2],
    ['es', 2],
    ['s', 1],
    ['d', 1],
  ] as const) {
    if (!word.endsWith(suffix) || word.length - keep < 3) continue;
    const stem = word.slice(0, -keep);
    out.push(stem, `${stem}e`);
    if (stem.length > 3 && stem.at(-1) === stem.at(-2)) out.push(stem.slice(0, -1));
  }
  return out;
}

/**
 * What a question asks for, by its form ("query handling of question forms"): an
 * interrogative word names the kind of answer, which API operations name with a verb or a noun.
 * `which …` / `what …` ask for a set of things (AIP-132 List); a yes/no question (the query opens
 * with an auxiliary verb: "is", "does", "did", "can", …) asks for a check (a boolean operation,
 * `check_…`, `…_exists`); `who` / `whom` / `whose` asks for people (users, members); `how many` /
 * `how much` asks for a count. Each entry: the words that open or contain the form, and the words
 * searched for it.
 */
export const QUESTION_FORMS: ReadonlyArray<{ form: string; at: 'start' | 'anywhere'; words: readonly string[] }> = [
  { form: 'which', at: 'anywhere', words: ['list'] },
  { form: 'what', at: 'start', words: ['list'] },
  ...['is', 'are', 'was', 'were', 'does', 'do', 'did', 'can', 'has', 'have'].map((form) => ({
    form,
    at: 'start' as const,
    words: ['check'],
  })),
  ...['who', 'whom', 'whose'].map((form) => ({ form, at: 'anywhere' as const, words: ['users', 'people', 'members'] })),
  { form: 'how many', at: 'anywhere', words: ['count', 'number', 'total'] },
  { form: 'how much', at: 'anywhere', words: ['count', 'number', 'total'] },
];

/**
 * Phrasal verbs (verb + particle, adjacent) and the API verb each means (their dictionary sense:
 * "turn off" = make a device stop working = disable). The particle is a stop word and the verb
 * alone ("turn", "get") misleads, so the pair is read as one word.
 */
export const PHRASAL_VERBS: ReadonlyMap<string, readonly string[]> = new Map([
  ['turn off', ['disable']],
  ['switch off', ['disable']],
  ['turn on', ['enable']],
  ['switch on', ['enable']],
  ['get rid', ['delete', 'remove']],
  ['set up', ['create', 'configure']],
  ['look up', ['get', 'search']],
  ['sign up', ['create', 'register']],
]);

/**
 * The words a query's question form ({@link QUESTION_FORMS}) and its phrasal verbs
 * ({@link PHRASAL_VERBS}) stand for, one group per form or verb found. `terms`: the query's words,
 * lower case, in order, stop words included. Empty for a query without either.
 */
export function questionGroups(terms: readonly string[]): string[][] {
  const out: string[][] = [];
  const text = ` ${terms.join(' ')} `;
  const seen = new Set<string>();
  for (const { form, at, words } of QUESTION_FORMS) {
    const found = at === 'start' ? text.startsWith(` ${form} `) : text.includes(` ${form} `);
    const key = words.join(' ');
    if (found && !seen.has(key)) {
      seen.add(key);
      out.push([...words]);
    }
  }
  for (let i = 0; i + 1 < terms.length; i++) {
    const verb = PHRASAL_VERBS.get(`${terms[i]} ${terms[i + 1]}`);
    if (verb) out.push([...verb]);
  }
  return out;
}
