const { existsSync, watch } = require('node:fs');
const { dirname } = require('node:path');
const { app } = require('@azure/functions');

/** Resolves once the file named by the RELEASE_FILE setting exists: told when the test writes it, not polled. */
async function released() {
  const file = process.env.RELEASE_FILE;
  await new Promise((resolve) => {
    const done = () => existsSync(file) && resolve(watcher.close());
    const watcher = watch(dirname(file), done);
    done();
  });
}

// Bodies starting `hold-` run until the test releases them.
app.eventHub('one', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'one',
  handler: async (message, context) => {
    context.log(`started ${message}`);
    if (message.startsWith('hold-')) await released();
    context.log(`finished ${message}`);
  },
});

app.eventHub('many', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'many',
  handler: (messages, context) => {
    context.log(`batch ${messages.join(' ')} seq=${context.triggerMetadata.sequenceNumberArray.at(-1)}`);
  },
});
