/**
 * A browser's part in a web app's forms, without a browser: a page opened with its cookies and form
 * token, a form posted. Kept apart from test-support.ts (which starts apps and stacks) because the
 * `taskstack scenario` script runs these too, and its bundle need not carry the launcher.
 */

/** A browser's view of the app without a browser: the cookies it was given and the form token of a page. */
export interface FormSession {
  /** The Cookie header to send back. */
  cookie: string;
  /** The hidden `_csrf` value of the page's forms. */
  token: string;
  /** The page's HTML. */
  html: string;
}

/** Cookie pairs (`name=value`) of a response's Set-Cookie headers. */
export const cookiesOf = (response: Response) =>
  response.headers.getSetCookie().map((line) => line.split(';')[0] as string);

/** GET `path` (Index by default) as a fresh browser would, keeping its cookies and form token. */
export async function openPage(url: string, path = '/'): Promise<FormSession> {
  const response = await fetch(`${url}${path}`);
  const html = await response.text();
  if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${html}`);
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error(`${path} has no form token`);
  return { cookie: cookiesOf(response).join('; '), token, html };
}

/** POSTs a url-encoded form as a browser submits one (redirects not followed). */
export function postForm(url: string, path: string, fields: Record<string, string>, cookie?: string) {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie && { cookie }) },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}
