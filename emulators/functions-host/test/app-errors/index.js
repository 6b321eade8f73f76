const { app } = require('@azure/functions');

const name = async (_request, context) => ({ body: context.functionName });

// Names the runtime refuses: '<name>' is not a valid function name.
app.http('bad name', { authLevel: 'anonymous', route: 'bad-name', handler: name });
app.http('host', { authLevel: 'anonymous', route: 'host-route', handler: name });
app.http('1st', { authLevel: 'anonymous', route: 'first', handler: name });
// Routes in the runtime's own space.
app.http('adminRoute', { authLevel: 'anonymous', route: 'admin/things', handler: name });
app.http('runtimeRoute', { authLevel: 'anonymous', route: '/Runtime/x', handler: name });
// The same route (any case, any slashes) and a method in common: the later one is in error.
app.http('first', { authLevel: 'anonymous', route: 'same', methods: ['GET', 'POST'], handler: name });
app.http('second', { authLevel: 'anonymous', route: '/SAME/', methods: ['POST', 'PUT'], handler: name });
// The runtime checks routes in the order of the names, not of registration: 'zeta' is the one in error.
app.http('zeta', { authLevel: 'anonymous', route: 'dup', handler: name });
app.http('alpha', { authLevel: 'anonymous', route: 'dup', handler: name });
// No method in common: both run.
app.http('third', { authLevel: 'anonymous', route: 'same', methods: ['DELETE'], handler: name });
// Valid names with digits, '_' and '-'.
app.http('ok_2-b', { authLevel: 'anonymous', handler: name });
// Disabled (the setting's value in any case).
app.http('off', { authLevel: 'anonymous', handler: name });
// Triggers the runtime cannot index: a schedule that is neither NCRONTAB nor a TimeSpan, an unset setting.
const tick = async () => {};
app.timer('badSchedule', { schedule: 'every minute', handler: tick });
app.timer('unsetSchedule', { schedule: '%NoSuchSchedule%', handler: tick });
