import { app, input, output } from '@azure/functions';

/** What an input value is, since JSON cannot say `undefined`. */
const kind = (value) =>
  value === undefined
    ? 'undefined'
    : value === null
      ? 'null'
      : Buffer.isBuffer(value)
        ? 'buffer'
        : typeof value;

const note = input.storageBlob({ path: 'notes/{name}.txt', connection: 'StorageConnection' });
app.http('readNote', {
  route: 'notes/{name}',
  extraInputs: [note],
  handler: (_request, context) => {
    const value = context.extraInputs.get(note);
    return { jsonBody: { kind: kind(value), text: value?.toString('utf8') ?? null } };
  },
});

const setting = input.storageBlob({
  path: '%NotesContainer%/{query.name}.json',
  connection: 'StorageConnection',
  dataType: 'string',
});
app.http('readSetting', {
  extraInputs: [setting],
  handler: (_request, context) => {
    const value = context.extraInputs.get(setting);
    return { jsonBody: { kind: kind(value), value: value ?? null } };
  },
});

const cosmos = { connection: 'DocumentDbConnection', databaseName: 'TasksDB', containerName: 'Tasks' };
const task = input.cosmosDB({ ...cosmos, id: '{Query.id}', partitionKey: '{Query.id}' });
app.http('readTask', {
  extraInputs: [task],
  handler: (_request, context) => {
    const value = context.extraInputs.get(task);
    return { jsonBody: { kind: kind(value), task: value ?? null } };
  },
});

// No partitionKey: the extension reads with PartitionKey.None, which finds no document of a container
// partitioned by /id.
const taskWithoutKey = input.cosmosDB({ ...cosmos, id: '{Query.id}' });
app.http('readTaskWithoutKey', {
  extraInputs: [taskWithoutKey],
  handler: (_request, context) => {
    const value = context.extraInputs.get(taskWithoutKey);
    return { jsonBody: { kind: kind(value), task: value ?? null } };
  },
});

const byTitle = input.cosmosDB({
  ...cosmos,
  sqlQuery: 'SELECT c.id, c.Title FROM c WHERE c.Title = {title} ORDER BY c.id',
});
app.http('findTasks', {
  route: 'tasks/by-title/{title}',
  extraInputs: [byTitle],
  handler: (_request, context) => ({ jsonBody: context.extraInputs.get(byTitle) }),
});

const table = input.table({ tableName: 'people', connection: 'StorageConnection' });
app.http('readTable', {
  extraInputs: [table],
  handler: () => ({ body: 'never runs' }),
});

// Cosmos DB output: the request's JSON body (one document or an array) written to TasksDB/Tasks.
const saved = output.cosmosDB({ ...cosmos });
app.http('saveTasks', {
  methods: ['POST'],
  extraOutputs: [saved],
  handler: async (request, context) => {
    context.extraOutputs.set(saved, await request.json());
    return { status: 201 };
  },
});

// A container no one created: written only with createIfNotExists.
for (const [name, createIfNotExists] of [
  ['saveToNewContainer', true],
  ['saveToMissingContainer', false],
]) {
  const target = output.cosmosDB({
    connection: 'DocumentDbConnection',
    databaseName: 'NewDB',
    containerName: name,
    createIfNotExists,
    partitionKey: '/id',
  });
  app.http(name, {
    methods: ['POST'],
    extraOutputs: [target],
    handler: async (request, context) => {
      context.extraOutputs.set(target, await request.json());
      return { status: 201 };
    },
  });
}
