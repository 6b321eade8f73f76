const { Readable } = require('node:stream');
const { app } = require('@azure/functions');

app.setup({ enableHttpStream: true });

let release;
const released = new Promise((resolve) => {
  release = resolve;
});

app.http('stream', {
  methods: ['GET'],
  handler: async () => {
    async function* chunks() {
      yield Buffer.from('first\n');
      await released;
      yield Buffer.from('second\n');
    }
    return { body: Readable.from(chunks()), headers: { 'content-type': 'text/plain' } };
  },
});

app.http('release', {
  methods: ['POST'],
  handler: async () => {
    release();
    return { body: 'released' };
  },
});

app.http('count', {
  methods: ['POST'],
  route: 'count/{label}',
  handler: async (request) => {
    let bytes = 0;
    for await (const chunk of request.body) bytes += chunk.length;
    return {
      jsonBody: { label: request.params.label, bytes, header: request.headers.get('x-test') },
      cookies: [{ name: 'counted', value: String(bytes), path: '/' }],
    };
  },
});

app.http('streamFail', {
  handler: async () => {
    throw new Error('stream boom');
  },
});
