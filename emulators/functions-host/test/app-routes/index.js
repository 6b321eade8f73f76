const { app } = require('@azure/functions');

// A site served from the root: with an empty prefix, `/` is one of its routes (GET only).
app.http('site', {
  methods: ['GET'],
  authLevel: 'anonymous',
  route: '{*path}',
  handler: async (request) => ({ body: `site: ${request.params.path ?? '(root)'}` }),
});

app.http('upload', {
  methods: ['POST'],
  authLevel: 'anonymous',
  route: 'upload',
  handler: async (request) => ({ body: String((await request.arrayBuffer()).byteLength) }),
});
