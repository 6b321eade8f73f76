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
// Holding the event loop, as a debugger's breakpoint does: no timer of the worker's own can fire. A
// blocked wait rather than a busy loop, which burnt a core until the worker was killed.
app.http('hold', {
  authLevel: 'anonymous',
  handler: async () => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
    return { body: 'never' };
  },
});
