const { app } = require('@azure/functions');

// The load-ahead test counts this line: the host imports the app once per process, settings applied.
console.log(`app-load imported (LOAD_SETTING=${process.env.LOAD_SETTING})`);

app.http('loaded', { authLevel: 'anonymous', handler: async () => ({ body: process.env.LOAD_SETTING }) });
