const { app } = require('@azure/functions');

// Runs per process: each run logs its number and the retry context the worker received.
const runs = new Map();
const run = (key, context) => {
  const n = (runs.get(key) ?? 0) + 1;
  runs.set(key, n);
  const retry = context.retryContext;
  context.log(`${key} run ${n} retry=${retry?.retryCount}/${retry?.maxRetryCount}`);
  return n;
};

app.timer('flaky', {
  schedule: '0 0 0 * * *',
  retry: { strategy: 'fixedDelay', maxRetryCount: 3, delayInterval: { minutes: 5 } },
  handler: (_timer, context) => {
    if (run('flaky', context) <= 2) throw new Error('flaky failed');
  },
});

app.timer('backoff', {
  schedule: '0 0 0 * * *',
  retry: {
    strategy: 'exponentialBackoff',
    maxRetryCount: 5,
    minimumInterval: { seconds: 2 },
    maximumInterval: { seconds: 6 },
  },
  handler: (_timer, context) => {
    run('backoff', context);
    throw new Error('backoff failed');
  },
});

// No policy of its own: host.json's applies (the others' own policies win over it).
app.timer('hostRetry', {
  schedule: '0 0 0 * * *',
  handler: (_timer, context) => {
    run('hostRetry', context);
    throw new Error('hostRetry failed');
  },
});

// Bodies starting `once-` fail on their first run; `always-` on every run.
app.eventHub('events', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'one',
  retry: { strategy: 'fixedDelay', maxRetryCount: 2, delayInterval: { seconds: 10 } },
  handler: (message, context) => {
    const n = run(message, context);
    if (message.startsWith('always-') || (message.startsWith('once-') && n === 1))
      throw new Error(`${message} failed`);
  },
});

// HTTP triggers do not support retry policies: a warning at start, and no retry.
app.http('withRetry', {
  retry: { strategy: 'fixedDelay', maxRetryCount: 3, delayInterval: { seconds: 1 } },
  handler: () => ({ body: 'ok' }),
});

// No policy of its own, but host.json's applies to it: the same warning.
app.http('plain', { handler: () => ({ body: 'ok' }) });
