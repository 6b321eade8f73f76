import { app } from '@azure/functions';

const tasks = { connection: 'DocumentDbConnection', databaseName: 'TasksDB', containerName: 'Tasks' };

/** A function on TasksDB/Tasks that logs `<label> <id>` for each document it is given. */
const follow = (name, label, options) =>
  app.cosmosDB(name, {
    ...tasks,
    ...options,
    handler: (documents, context) => {
      for (const document of documents) context.log(`${label} ${document.id}`);
    },
  });

app.cosmosDB('onTaskChange', {
  ...tasks,
  leaseContainerName: 'leases',
  createLeaseContainerIfNotExists: true,
  startFromBeginning: true,
  feedPollDelay: 200,
  handler: (documents, context) => {
    for (const document of documents) context.log(`changed ${document.id} ${document.Title}`);
    if (documents.some((document) => document.Title === 'Fails')) throw new Error('a batch that fails');
  },
});

// Started late by a retry: from the beginning, a document written just before its first read still arrives.
follow('withoutLeases', 'late listener saw', {
  leaseContainerName: 'absent',
  startFromBeginning: true,
  feedPollDelay: 200,
});

// An hour between polls: only moving the stack clock brings a change within a test.
follow('hourlyChange', 'hourly', {
  leaseContainerName: 'hourlyLeases',
  createLeaseContainerIfNotExists: true,
  feedPollDelay: 3_600_000,
});

// Start options the extension refuses: its listener cannot start (and is retried, as any).
follow('bothStarts', 'both starts', {
  leaseContainerName: 'leases',
  startFromBeginning: true,
  startFromTime: '2026-01-01T00:00:00Z',
});
follow('badStartTime', 'bad start time', { leaseContainerName: 'leases', startFromTime: 'yesterday' });

// A connection that no setting names: the extension cannot index it.
follow('unconnected', 'unconnected', { connection: 'NoSuchCosmos' });

// Leases kept in the monitored container itself: the extension cannot index it (each lease written
// would be a change of the feed it follows).
follow('ownLeases', 'own leases saw', { leaseContainerName: 'Tasks', createLeaseContainerIfNotExists: true });

// A poll delay of 0 is no delay to the extension: the processor's default (5 s) applies.
follow('noPollDelay', 'no poll delay', {
  leaseContainerName: 'noPollDelayLeases',
  createLeaseContainerIfNotExists: true,
  feedPollDelay: 0,
});

// Leases in a database of their own, which the extension creates with the container.
follow('ownLeaseDatabase', 'own lease database saw', {
  leaseDatabaseName: 'LeasesDB',
  createLeaseContainerIfNotExists: true,
  startFromBeginning: true,
  feedPollDelay: 200,
});

// Two functions on one lease container with one prefix compete for its leases; a third has its own prefix.
for (const [name, prefix] of [
  ['sharedLeasesA', undefined],
  ['sharedLeasesB', undefined],
  ['ownPrefix', 'own'],
])
  follow(name, `${name} saw`, {
    leaseContainerName: 'sharedLeases',
    leaseContainerPrefix: prefix,
    createLeaseContainerIfNotExists: true,
    startFromBeginning: true,
    feedPollDelay: 200,
  });

// A container the test deletes while its listener runs.
follow('onDoomed', 'doomed saw', {
  containerName: 'Doomed',
  leaseContainerName: 'doomedLeases',
  createLeaseContainerIfNotExists: true,
  feedPollDelay: 200,
});
