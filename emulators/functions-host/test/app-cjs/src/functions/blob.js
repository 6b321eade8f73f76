const { existsSync, watch } = require('node:fs');
const { dirname } = require('node:path');
const { app, output } = require('@azure/functions');

/** blob-events.test.ts holds the runs of `held-*` blobs until the file its setting `HeldRunsRelease` names exists. */
async function held(name) {
  const file = process.env.HeldRunsRelease;
  if (!file || !name.startsWith('held-')) return;
  // Told by the file system when the test writes it, not polled.
  await new Promise((resolve) => {
    const done = () => existsSync(file) && resolve(watcher.close());
    const watcher = watch(dirname(file), done);
    done();
  });
}

const processed = output.storageBlob({ path: 'processed/{name}.txt', connection: 'StorageConnection' });

app.storageBlob('ProcessTask', {
  path: 'tasks/{name}.json',
  connection: 'StorageConnection',
  extraOutputs: [processed],
  handler: async (blob, context) => {
    context.log(`processed ${context.triggerMetadata.name}: ${blob.toString('utf8')}`);
    await held(context.triggerMetadata.name);
    context.extraOutputs.set(
      processed,
      `seen ${blob.length} bytes (${context.triggerMetadata.properties.contentLength}, ${context.triggerMetadata.properties.createdOn}) of ${context.triggerMetadata.blobTrigger}`,
    );
  },
});

app.storageBlob('poisoned', {
  path: 'poison-input/{name}',
  connection: 'StorageConnection',
  handler: (_blob, context) => {
    throw new Error(`cannot process ${context.triggerMetadata.name}`);
  },
});

app.storageBlob('misconfigured', {
  path: 'elsewhere/{name}',
  connection: 'MissingConnection',
  handler: () => {},
});

const note = output.storageBlob({
  path: 'notes/{DateTime}-{rand-guid}.txt',
  connection: 'StorageConnection',
});
app.http('saveNote', {
  methods: ['POST'],
  extraOutputs: [note],
  handler: async (request, context) => {
    context.extraOutputs.set(note, await request.text());
    return { status: 201 };
  },
});

const copy = output.storageBlob({ path: 'tasks-copy/{id}.json', connection: 'StorageConnection' });
app.http('saveTask', {
  methods: ['PUT'],
  route: 'tasks/{id}',
  extraOutputs: [copy],
  handler: async (request, context) => {
    context.extraOutputs.set(copy, await request.json());
    return { status: 204 };
  },
});

// Binding data from the request: a JSON body's properties, query parameters, route values, headers.
const filed = output.storageBlob({
  path: 'tasks-copy/{Title}-{v}-{query.v}-{headers.x-tag}-{id}.json',
  connection: 'StorageConnection',
});
app.http('fileTask', {
  methods: ['POST'],
  route: 'filed/{id}',
  extraOutputs: [filed],
  handler: async (request, context) => {
    context.extraOutputs.set(filed, await request.text());
    return { status: 204 };
  },
});

// A path that names a container alone: every blob in it.
app.storageBlob('wholeContainer', {
  path: 'whole',
  connection: 'StorageConnection',
  handler: (blob, context) => {
    context.log(`whole ${context.triggerMetadata.blobTrigger}: ${blob.toString('utf8')}`);
  },
});

// Holds each run a while, and logs how many ran at once when it began (host.json: at most 4).
let parallelRuns = 0;
app.storageBlob('parallel', {
  path: 'parallel/{name}',
  connection: 'StorageConnection',
  handler: async (_blob, context) => {
    parallelRuns++;
    context.log(`parallel ${context.triggerMetadata.name}: ${parallelRuns} running`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    parallelRuns--;
  },
});

app.storageBlob('withMetadata', {
  path: 'meta/{name}',
  connection: 'StorageConnection',
  handler: (_blob, context) => {
    context.log(
      `metadata ${context.triggerMetadata.name}: ${JSON.stringify(context.triggerMetadata.metadata)}`,
    );
  },
});

// Runs long enough for a test to kill the host under it (less than the 2 s functionTimeout).
app.storageBlob('crashing', {
  path: 'crash/{name}',
  connection: 'StorageConnection',
  handler: async (_blob, context) => {
    context.log(`crashing ${context.triggerMetadata.name} begun`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
  },
});
