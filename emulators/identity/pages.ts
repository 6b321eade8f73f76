/**
 * The provider's pages: sign-in, sign-out and errors. Plain HTML forms, no script; every value written
 * into a page goes through `escapeHtml`.
 */
import type { ServerResponse } from 'node:http';
import type { EntraError } from './entra-errors.ts';

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * No script, no framing. Forms post only to this origin, plus the origins given: browsers apply
 * `form-action` to the redirects after a post too (sign-in and sign-out end at the app).
 */
const securityHeaders = (formOrigins: string[]) => ({
  'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${formOrigins.join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
});

const STYLE =
  'body{font-family:Segoe UI,sans-serif;background:#f2f2f2}main{max-width:440px;margin:10vh auto;background:#fff;padding:44px;box-shadow:0 2px 6px rgba(0,0,0,.2)}label,input,button{display:block;box-sizing:border-box;width:100%;margin:.4em 0}input{padding:6px}button{background:#0067b8;color:#fff;border:0;padding:8px}.error{color:#e81123}';

function layout(title: string, body: string) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}

export function sendPage(
  res: ServerResponse,
  status: number,
  title: string,
  body: string,
  formOrigins: string[] = [],
) {
  const html = layout(title, body);
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    ...securityHeaders(formOrigins),
  });
  res.end(html);
}

/** The page as a string, for oidc-provider's hooks that set `ctx.body` themselves. */
export const page = (title: string, body: string, formOrigins: string[] = []) => ({
  html: layout(title, body),
  headers: securityHeaders(formOrigins),
});

export function signInForm(options: {
  action: string;
  clientName: string;
  userName?: string;
  message?: string;
}) {
  const { action, clientName, userName = '', message } = options;
  return `<p>to continue to ${escapeHtml(clientName)}</p>${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}<form method="post" action="${escapeHtml(action)}"><label for="username">Email, phone, or Skype</label><input id="username" name="username" type="email" autocomplete="username" required value="${escapeHtml(userName)}"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required><button type="submit">Sign in</button></form>`;
}

/** Entra's error page: the AADSTS code and text, no redirect anywhere. */
export function errorBody(entra: EntraError) {
  return `<p>Sorry, but we're having trouble signing you in.</p><p class="error" id="error">AADSTS${entra.code}: ${escapeHtml(entra.message)}</p>`;
}
