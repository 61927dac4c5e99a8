/**
 * One rule for "this name carries a secret": query parameters in the request log
 * (`http/logging.ts`) and the arguments and result fields the automatic execution memory leaves
 * out (`modules/memory/sentences.ts`) are judged by {@link isSecretName}, so a credential the log
 * hides is never written into a memory either, and the other way round.
 */

/** Secret words found inside a name whatever separates them (`clientSecret`, `newpassword`, `x_access_token`). */
const SECRET_PARTS =
  /pass(?:word|wd|phrase)|secret|token|api[-_.]?key|credential|authori[sz]ation|authenticat|private[-_.]?key|card[-_.]?num|signature|cookie|bearer/i;

/** Secret words that count only as a whole word of a name (`key` in `api_key` or `x-api-key`, not in `keyword`). */
const SECRET_WORDS = new Set([
  'pass',
  'pwd',
  'key',
  'keys',
  'apikey',
  'auth',
  'sig',
  'pin',
  'otp',
  'ssn',
  'cvv',
  'cvc',
  'jwt',
  'verifier',
]);

/**
 * True when a field, argument, header or query parameter named `name` carries a secret:
 * passwords, secrets, tokens, API keys (`api_key`, `apikey`, `x-api-key`, `key`), `authorization`,
 * credentials, cookies, signatures, PKCE verifiers, PINs and card data. Names are
 * compared without case; a word counts in snake_case, kebab-case, dotted and camelCase names.
 * Wrongly hiding a harmless value costs little; logging or remembering a credential does not.
 */
export function isSecretName(name: string): boolean {
  if (SECRET_PARTS.test(name)) return true;
  for (const word of name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)) {
    if (SECRET_WORDS.has(word)) return true;
  }
  return false;
}
