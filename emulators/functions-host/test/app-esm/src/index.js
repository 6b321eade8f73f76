import { app, output } from '@azure/functions';
import './cosmos.js';
import './events.js';

app.http('ping', { methods: ['GET'], handler: async () => ({ body: 'pong' }) });

app.timer('startup', {
  schedule: '0 0 0 1 1 *',
  runOnStartup: true,
  useMonitor: false,
  handler: (timer, context) => context.log(`startup ran isPastDue=${timer.isPastDue}`),
});

const topic = output.eventGrid({ topicEndpointUri: 'TopicEndpoint', topicKeySetting: 'TopicKey' });
app.http('publish', {
  methods: ['POST'],
  extraOutputs: [topic],
  handler: async (request, context) => {
    context.extraOutputs.set(topic, await request.json());
    return { status: 202 };
  },
});

app.eventGrid('onTaskCreated', {
  handler: (event, context) => {
    if (event.data?.fail) throw new Error('event handler failed');
    context.log(`event ${event.type ?? event.eventType} ${event.subject} ${JSON.stringify(event.data)}`);
    context.log(`metadata of ${event.id}: ${Object.keys(context.triggerMetadata ?? {}).join(',')}`);
  },
});
