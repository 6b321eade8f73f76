import { app, input } from '@azure/functions';

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
