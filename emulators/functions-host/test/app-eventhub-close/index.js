const { existsSync } = require('node:fs');
const { app } = require('@azure/functions');

/** Resolves once the file named by the RELEASE_FILE setting exists (the test writes it). */
async function released() {
  while (!existsSync(process.env.RELEASE_FILE)) await new Promise((resolve) => setTimeout(resolve, 10));
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
