import { app, output } from '@azure/functions';

/** What a function sets as its Event Hubs output, by name. */
const VALUES = {
  text: 'plain text: é',
  buffer: Buffer.from([0, 1, 2, 255]),
  object: { id: 't-1', title: 'Write tests', tags: ['a', 'b'], done: false, meta: {} },
  array: ['first', { id: 2 }, 3, true, null, [1]],
  jsonText: '{"id":"t-2","n":[1,2]}',
  jsonArrayText: ' ["x", {"y": 1}] ',
  notJsonText: '{not json}',
  number: 42,
  fraction: 1.5,
  empty: [],
  // The Basic tier takes messages of at most 256 KB.
  tooLarge: 'x'.repeat(300_000),
  // Two fill one batch; the third goes in a second.
  spill: ['a', 'b', 'c'].map((letter) => letter.repeat(100_000)),
};

const taskEvents = output.eventHub({ eventHubName: 'taskevents', connection: 'StreamHubConnection' });

app.http('sendEvents', {
  methods: ['POST'],
  authLevel: 'anonymous',
  route: 'events/{form}',
  extraOutputs: [taskEvents],
  handler: (request, context) => {
    context.extraOutputs.set(taskEvents, VALUES[request.params.form]);
    return { body: 'sent' };
  },
});

/** The admin API runs it with an Event Grid event whose data names the value to return. */
app.eventGrid('returnEvents', {
  return: taskEvents,
  handler: (event) => VALUES[event.data.form],
});

/** Each sends one text event through another connection or hub: all but the last fail. */
const variants = {
  missingHub: { eventHubName: 'nohub', connection: 'StreamHubConnection' },
  missingSetting: { eventHubName: 'taskevents', connection: 'MissingHubConnection' },
  identityWithoutNamespace: { eventHubName: 'taskevents', connection: 'HubIdentity' },
  noConnection: { eventHubName: 'taskevents', connection: '' },
  entityPath: { eventHubName: 'nohub', connection: 'HubWithEntityPath' },
};
for (const [name, options] of Object.entries(variants)) {
  const hub = output.eventHub(options);
  app.http(name, {
    methods: ['POST'],
    authLevel: 'anonymous',
    extraOutputs: [hub],
    handler: (_request, context) => {
      context.extraOutputs.set(hub, `via ${name}`);
      return { body: 'sent' };
    },
  });
}
