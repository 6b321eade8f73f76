import { app } from '@azure/functions';

app.cosmosDB('onTaskChange', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseContainerName: 'leases',
  createLeaseContainerIfNotExists: true,
  startFromBeginning: true,
  feedPollDelay: 200,
  handler: (documents, context) => {
    for (const document of documents) context.log(`changed ${document.id} ${document.Title}`);
    if (documents.some((document) => document.Title === 'Fails')) throw new Error('a batch that fails');
  },
});

app.cosmosDB('withoutLeases', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseContainerName: 'absent',
  // Started late by a retry: from the beginning, a document written just before its first read still arrives.
  startFromBeginning: true,
  feedPollDelay: 200,
  handler: (documents, context) => {
    for (const document of documents) context.log(`late listener saw ${document.id}`);
  },
});

app.cosmosDB('hourlyChange', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseContainerName: 'hourlyLeases',
  createLeaseContainerIfNotExists: true,
  // An hour between polls: only moving the stack clock brings a change within a test.
  feedPollDelay: 3_600_000,
  handler: (documents, context) => {
    for (const document of documents) context.log(`hourly ${document.id}`);
  },
});

// Start options the extension refuses: its listener cannot start (and is retried, as any).
for (const [name, options] of [
  ['bothStarts', { startFromBeginning: true, startFromTime: '2026-01-01T00:00:00Z' }],
  ['badStartTime', { startFromTime: 'yesterday' }],
])
  app.cosmosDB(name, {
    connection: 'DocumentDbConnection',
    databaseName: 'TasksDB',
    containerName: 'Tasks',
    leaseContainerName: 'leases',
    ...options,
    handler: () => {},
  });

// A connection that no setting names: the extension cannot index it.
app.cosmosDB('unconnected', {
  connection: 'NoSuchCosmos',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  handler: () => {},
});

// Leases kept in the monitored container itself: the extension cannot index it (each lease written
// would be a change of the feed it follows).
app.cosmosDB('ownLeases', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseContainerName: 'Tasks',
  createLeaseContainerIfNotExists: true,
  handler: (documents, context) => {
    for (const document of documents) context.log(`own leases saw ${document.id}`);
  },
});

// A poll delay of 0 is no delay to the extension: the processor's default (5 s) applies.
app.cosmosDB('noPollDelay', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseContainerName: 'noPollDelayLeases',
  createLeaseContainerIfNotExists: true,
  feedPollDelay: 0,
  handler: (documents, context) => {
    for (const document of documents) context.log(`no poll delay ${document.id}`);
  },
});

// Leases in a database of their own, which the extension creates with the container.
app.cosmosDB('ownLeaseDatabase', {
  connection: 'DocumentDbConnection',
  databaseName: 'TasksDB',
  containerName: 'Tasks',
  leaseDatabaseName: 'LeasesDB',
  createLeaseContainerIfNotExists: true,
  startFromBeginning: true,
  feedPollDelay: 200,
  handler: (documents, context) => {
    for (const document of documents) context.log(`own lease database saw ${document.id}`);
  },
});

// Two functions on one lease container with one prefix compete for its leases; a third has its own prefix.
for (const [name, prefix] of [
  ['sharedLeasesA', undefined],
  ['sharedLeasesB', undefined],
  ['ownPrefix', 'own'],
])
  app.cosmosDB(name, {
    connection: 'DocumentDbConnection',
    databaseName: 'TasksDB',
    containerName: 'Tasks',
    leaseContainerName: 'sharedLeases',
    leaseContainerPrefix: prefix,
    createLeaseContainerIfNotExists: true,
    startFromBeginning: true,
    feedPollDelay: 200,
    handler: (documents, context) => {
      for (const document of documents) context.log(`${name} saw ${document.id}`);
    },
  });
