/**
 * For tests: a person at a browser, reduced to fetch with a cookie jar. It follows redirects one at a
 * time (so a test sees each hop) and fills in the provider's sign-in form.
 */
export interface Hop {
  status: number;
  url: string;
  location: string | undefined;
  body: string;
  headers: Headers;
}

export class FormClient {
  readonly cookies = new Map<string, string>();

  /** One request, no redirect followed; cookies sent and kept as a browser would (path ignored). */
  async request(
    url: string,
    init: { method?: string; form?: Record<string, string>; origin?: string } = {},
  ): Promise<Hop> {
    const headers: Record<string, string> = { accept: 'text/html' };
    if (this.cookies.size > 0)
      headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (init.origin) headers.origin = init.origin;
    const response = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = cookie.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const expired = attributes.some(
        (a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0$/i.test(a),
      );
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(pair.indexOf('=') + 1));
    }
    const location = response.headers.get('location') ?? undefined;
    return {
      status: response.status,
      url,
      location: location && new URL(location, url).href,
      body: await response.text(),
      headers: response.headers,
    };
  }

  /** Follows redirects until an answer that is not one, or until `stopAt` (a URL prefix) is reached. */
  async follow(url: string, stopAt?: string): Promise<Hop> {
    let hop = await this.request(url);
    for (let hops = 0; hop.location && hops < 10; hops++) {
      if (stopAt && hop.location.startsWith(stopAt)) return hop;
      hop = await this.request(hop.location);
    }
    return hop;
  }

  /** Posts the sign-in form of `page` (its action resolved against the page's URL). */
  signIn(page: Hop, username: string, password: string) {
    const action = /<form method="post" action="([^"]+)"/.exec(page.body)?.[1];
    if (!action) throw new Error(`no sign-in form at ${page.url}: ${page.status}`);
    return this.request(new URL(action.replaceAll('&#38;', '&'), page.url).href, {
      form: { username, password },
    });
  }
}
