const { app } = require('@azure/functions');

// Read as the worker imports the app (module top level), before the host listens or any function runs.
const atImport = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name.startsWith('WEBSITE_')),
);

app.http('platform', { authLevel: 'anonymous', handler: async () => ({ jsonBody: atImport }) });
