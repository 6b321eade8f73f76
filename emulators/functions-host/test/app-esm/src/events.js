import { app } from '@azure/functions';

app.eventHub('ProcessTaskEvents', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'many',
  handler: (messages, context) => {
    const meta = context.triggerMetadata;
    context.log(`batch of ${messages.length}`);
    messages.forEach((message, i) => {
      context.log(
        `message ${JSON.stringify(message)} seq=${meta.sequenceNumberArray[i]} partition=${meta.partitionContext.partitionId} props=${JSON.stringify(meta.propertiesArray[i])} sys=${JSON.stringify(meta.systemPropertiesArray[i])}`,
      );
    });
  },
});

app.eventHub('oneAtATime', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'one',
  consumerGroup: '%OneConsumerGroup%',
  dataType: 'binary',
  retry: { strategy: 'fixedDelay', maxRetryCount: 2, delayInterval: { seconds: 1 } },
  handler: (message, context) => {
    context.log(
      `one ${Buffer.isBuffer(message)} ${message.toString('utf8')} seq=${context.triggerMetadata.sequenceNumber} offset=${typeof context.triggerMetadata.offset}`,
    );
  },
});
