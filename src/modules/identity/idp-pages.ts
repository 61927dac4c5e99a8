/**
 * Server-rendered pages of the embedded OpenID Provider: the sign-in form and the error page.
 * Plain HTML, no scripts, no external resources; every interpolated value goes through
 * {@link escapeHtml}.
 */

/** Escape text for an HTML text node or a double-quoted attribute value. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Headers for every page: no caching, no framing, nothing loaded from elsewhere. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

const STYLE = `body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;padding:48px 16px;color:#1f2328}
main{max-width:360px;margin:0 auto;background:#fff;border-radius:8px;padding:28px;box-shadow:0 1px 3px rgba(0,0,0,.15)}
h1{font-size:1.3em;margin:0 0 4px}p{margin:0 0 16px;color:#57606a}label{display:block;font-size:.9em;margin:12px 0 4px}
input{width:100%;box-sizing:border-box;padding:9px;border:1px solid #d0d7de;border-radius:6px;font-size:1em}
button{margin-top:18px;width:100%;padding:10px;border:0;border-radius:6px;background:#0969da;color:#fff;font-size:1em;cursor:pointer}
.error{background:#ffebe9;border:1px solid #ff8182;padding:8px 10px;border-radius:6px;color:#82071e}
.cancel{display:block;text-align:center;margin-top:12px;font-size:.9em;color:#57606a}`;

/** A complete page: `title` escaped, `body` inserted as given (callers escape what they interpolate). */
export function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

/**
 * The sign-in form of interaction `uid`. It posts to `/idp/interaction/<uid>/login`; the
 * interaction cookie (path-scoped to that URL, SameSite=Lax) must match `uid`, so another site
 * cannot submit it for the user (CSRF).
 */
export function loginPage(input: { uid: string; clientName: string; email?: string; error?: string }): string {
  const action = `/idp/interaction/${encodeURIComponent(input.uid)}`;
  return page(
    'Sign in — Agent Platform',
    `<h1>Sign in</h1><p>to continue to ${escapeHtml(input.clientName)}</p>
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="${escapeHtml(action)}/login" autocomplete="on">
<label for="email">Email</label><input id="email" name="email" type="email" required autofocus value="${escapeHtml(input.email ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" required>
<button type="submit">Sign in</button></form>
<form method="post" action="${escapeHtml(action)}/abort"><button class="cancel" type="submit" style="background:none;color:#57606a;margin-top:6px">Cancel</button></form>`,
  );
}

/** Error page of the provider (bad authorization request, expired interaction, …). */
export function errorPage(out: { error?: string; error_description?: string }): string {
  return page(
    'Sign-in error — Agent Platform',
    `<h1>Something went wrong</h1><p class="error">${escapeHtml(out.error ?? 'error')}${out.error_description ? `: ${escapeHtml(out.error_description)}` : ''}</p>
<p>Start the sign-in again from the application.</p>`,
  );
}
