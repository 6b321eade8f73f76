const { app } = require('@azure/functions');

// Each process says when it loaded: a restarted worker loads the app again.
console.log(`app-timeout loaded in ${process.pid}`);

app.http('quick', { authLevel: 'anonymous', handler: async () => ({ body: String(process.pid) }) });
// Ends when the URL in `release` answers: the test releases it past the 1 s timeout, within the grace.
app.http('late', {
  authLevel: 'anonymous',
  handler: async (request) => {
    await fetch(request.query.get('release'));
    return { body: 'late' };
  },
});
// Never ends, letting the event loop turn.
app.http('stuck', { authLevel: 'anonymous', handler: () => new Promise(() => {}) });
// Holding the event loop: no timer of the worker's own can fire.
app.http('spin', {
  authLevel: 'anonymous',
  handler: async () => {
    const end = Date.now() + 60_000;
    while (Date.now() < end) {}
    return { body: 'never' };
  },
});
