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

// The host tries routes in the order of the functions' names, whatever the templates: `details` answers
// /products/list before `list`, and `allItems` answers /items before `item` (azure-functions-host#9876).
const named = async (_request, context) => ({ body: context.functionName });
const get = (route) => ({ methods: ['GET'], authLevel: 'anonymous', route, handler: named });
app.http('list', get('products/list'));
app.http('details', get('products/{id}'));
app.http('item', get('items/{id?}'));
app.http('allItems', get('items'));
