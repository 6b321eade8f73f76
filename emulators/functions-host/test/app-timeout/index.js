const { app } = require('@azure/functions');

// Each process says when it loaded: a restarted worker loads the app again.
console.log(`app-timeout loaded in ${process.pid}`);

const after = (ms, body) => new Promise((resolve) => setTimeout(() => resolve({ body }), ms));

app.http('quick', { authLevel: 'anonymous', handler: async () => ({ body: String(process.pid) }) });
// Past the 1 s timeout, done within the grace: the invocation fails, the worker stays.
app.http('late', { authLevel: 'anonymous', handler: () => after(2_000, 'late') });
// Still running after the grace, letting the event loop turn.
app.http('stuck', { authLevel: 'anonymous', handler: () => after(60_000, 'never') });
// Holding the event loop: no timer of the worker's own can fire.
app.http('spin', {
  authLevel: 'anonymous',
  handler: async () => {
    const end = Date.now() + 60_000;
    while (Date.now() < end) {}
    return { body: 'never' };
  },
});
