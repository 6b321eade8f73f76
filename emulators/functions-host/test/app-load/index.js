const { app } = require('@azure/functions');

// The load-ahead test counts this line: the host imports the app once per process, settings applied.
console.log(`app-load imported (LOAD_SETTING=${process.env.LOAD_SETTING})`);

app.http('loaded', { authLevel: 'anonymous', handler: async () => ({ body: process.env.LOAD_SETTING }) });

// Whether Node's fetch (undici) was loaded before the host's start ran this app's appStart hooks: the
// host loads it ahead when it will make storage requests as it starts (the library itself does not).
let fetchLoadedAtStart;
app.hook.appStart(() => {
  fetchLoadedAtStart = process.moduleLoadList.includes('NativeModule internal/deps/undici/undici');
});
app.http('fetch-at-start', {
  authLevel: 'anonymous',
  handler: async () => ({ body: String(fetchLoadedAtStart) }),
});
