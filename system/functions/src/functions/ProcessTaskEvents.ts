/** Event Hubs trigger on taskevents (StreamHubConnection), batches: logs each message. */
import { app, type InvocationContext } from '@azure/functions';

export function processTaskEvents(messages: unknown[], context: InvocationContext): void {
  for (const message of messages) {
    // The library hands JSON messages over parsed; log them as the text that was sent.
    const body = typeof message === 'string' ? message : JSON.stringify(message);
    context.log(`ProcessTaskEvents: message: ${body}`);
  }
}

app.eventHub('ProcessTaskEvents', {
  connection: 'StreamHubConnection',
  eventHubName: 'taskevents',
  cardinality: 'many',
  handler: processTaskEvents,
});
