const { app } = require('@azure/functions');

app.http('hello', {
  methods: ['GET', 'POST'],
  route: 'hello/{name?}',
  handler: async (request, context) => {
    context.log(`hello ${request.params.name ?? 'world'}`);
    return {
      body: `Hello, ${request.params.name ?? request.query.get('name') ?? 'world'}`,
      headers: { 'x-greeting': 'yes' },
      cookies: [{ name: 'visited', value: '1', path: '/', httpOnly: true, sameSite: 'Lax', maxAge: 60 }],
    };
  },
});

/** Cookies as functions set them: the host writes each through ASP.NET Core's response cookies. */
app.http('cookies', {
  handler: async (request) => {
    const bad = { name: { name: 'no spaces', value: '1' }, maxAge: { name: 'gone', value: '', maxAge: -1 } };
    if (request.query.has('bad')) return { cookies: [bad[request.query.get('bad')]] };
    return {
      headers: { 'set-cookie': 'fromHeaders=1' },
      cookies: [
        { name: 'plain', value: 'x' },
        {
          name: 'token',
          value: 'a b=c/é;',
          domain: 'example.com',
          path: '/api',
          expires: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)),
          maxAge: 90.9,
          secure: true,
          sameSite: 'None',
        },
        { name: 'strict', value: '', sameSite: 'Strict', httpOnly: true },
      ],
    };
  },
});

/** A header value the library takes (a byte string) but Kestrel refuses: it is no ASCII. */
app.http('nonAsciiHeader', {
  handler: async (request) => ({
    headers: { [request.query.get('name')]: 'attachment; filename="résumé.txt"' },
  }),
});

app.http('keyed', { authLevel: 'function', handler: async () => ({ jsonBody: { ok: true } }) });
app.http('adminOnly', { authLevel: 'admin', route: 'master-only', handler: async () => ({ body: 'admin' }) });

app.http('products', {
  route: 'products/{category:alpha}/{id:int?}',
  handler: async (request) => ({ jsonBody: { params: request.params } }),
});
// Never reached by a GET: 'products' comes first by name and its route takes products/special too.
app.http('productsById', {
  route: 'products/special',
  handler: async () => ({ body: 'literal' }),
});
// Both match `ties/1`: 'tieLower' comes first by name (any case).
app.http('tieLower', { route: 'ties/{id}', handler: async () => ({ body: 'ties/{id}' }) });
app.http('tieUpper', { route: 'Ties/{name}', handler: async () => ({ body: 'Ties/{name}' }) });
app.http('files', {
  route: 'files/{*path}',
  handler: async (request) => ({ body: request.params.path ?? '' }),
});

app.http('postOnly', { methods: ['POST'], route: 'post-only', handler: async () => ({ status: 201 }) });

app.http('echo', {
  methods: ['POST'],
  handler: async (request) => {
    const body = Buffer.from(await request.arrayBuffer());
    return { jsonBody: { bytes: body.length, contentType: request.headers.get('content-type') } };
  },
});

app.http('requestHeaders', {
  handler: async (request) => ({ jsonBody: Object.fromEntries(request.headers) }),
});

app.http('requestUrl', { route: 'url/{*rest}', handler: async (request) => ({ body: request.url }) });

app.http('query', {
  handler: async (request) => ({ jsonBody: Object.fromEntries(request.query) }),
});

/** Refuses bodies over the limit local.settings.json declares (Host.MaxRequestBodySize), as system/ does. */
const LIMIT = 2 * 1024 * 1024;
app.http('limited', {
  methods: ['POST'],
  handler: async (request) => {
    const body = Buffer.from(await request.arrayBuffer());
    if (Number(request.headers.get('content-length') ?? 0) > LIMIT || body.length > LIMIT)
      return { status: 413, body: `Request too large: the limit is ${LIMIT} bytes.` };
    return { jsonBody: { bytes: body.length } };
  },
});

app.http('upload', {
  methods: ['POST'],
  handler: async (request) => {
    const form = await request.formData();
    const file = form.get('file');
    return { body: `File uploaded: ${form.get('taskId')}/${file.name} (${file.size} bytes)` };
  },
});

app.http('settings', {
  handler: async () => ({
    jsonBody: {
      FROM_LOCAL: process.env.FROM_LOCAL,
      OVERRIDDEN: process.env.OVERRIDDEN,
      FROM_SETTINGS: process.env.FROM_SETTINGS,
    },
  }),
});

app.http('fail', {
  handler: async (_request, context) => {
    context.error('about to fail');
    throw new Error('boom: internal detail that must not leak');
  },
});

/** Throws what `?value=` holds as JSON, not an Error: the log reads it as the Node worker does. */
app.http('failWithValue', {
  handler: async (request) => {
    throw JSON.parse(request.query.get('value'));
  },
});

app.http('slow', {
  handler: () => new Promise((resolve) => setTimeout(() => resolve({ body: 'late' }), 4000)),
});
/** Answers once the URL in `release` answers: http.test.ts holds it in flight across the host's stop. */
app.http('held', {
  handler: async (request) => {
    await fetch(request.query.get('release'));
    return { body: 'answered' };
  },
});

app.http('noContent', { handler: async () => ({ status: 204 }) });
app.http('nothing', { handler: async () => undefined });

app.http('quiet', {
  handler: async (_request, context) => {
    context.log('suppressed by host.json');
    context.warn('kept by host.json');
    return { body: 'quiet' };
  },
});

app.http('register', {
  handler: async () => {
    try {
      app.http('late', { handler: async () => ({ body: 'late' }) });
      return { body: 'registered' };
    } catch (error) {
      return { status: 409, body: error.message };
    }
  },
});
