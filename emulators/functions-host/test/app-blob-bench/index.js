const { app } = require('@azure/functions');

app.storageBlob('ProcessTask', {
  path: 'tasks/{name}.json',
  connection: 'StorageConnection',
  handler: () => {},
});
