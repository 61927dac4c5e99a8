/**
 * A profile picture is a web address: `http:` or `https:` only (OIDC Core §5.1 `picture`: "URL of
 * the End-User's profile picture"). Any other scheme — `javascript:`, `data:`, `file:`, `vbscript:`
 * — would run or read something where a client renders `<img src>` / `<a href>` of it.
 */
import { AppError } from '../../http/errors.js';

/** Longest stored picture URL, characters (the schema's `maxLength`). */
export const PICTURE_MAX_LENGTH = 2048;

/** JSON Schema `pattern` of a picture URL: starts with `http://` or `https://`, any case (ECMA-262, no flags). */
export const PICTURE_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://';

/** `value` when it is an absolute `http:`/`https:` URL with a host, at most {@link PICTURE_MAX_LENGTH} characters; else undefined. */
export function webPicture(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > PICTURE_MAX_LENGTH) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname ? value : undefined;
}

/**
 * @returns `value` unchanged when {@link webPicture} accepts it
 * @throws AppError validation_failed (400, pointer `/picture`) otherwise
 */
export function assertWebPicture(value: string): string {
  if (webPicture(value) !== undefined) return value;
  throw new AppError('validation_failed', 'picture must be an http or https URL', {
    errors: [{ in: 'body', pointer: '/picture', message: 'must be an http or https URL' }],
  });
}
