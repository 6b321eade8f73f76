/** Event Grid subscription taskcreatedsub: logs the created task's title and id. */
import { app, type EventGridEvent, type InvocationContext } from '@azure/functions';

export function taskCreatedNotification(event: EventGridEvent, context: InvocationContext): void {
  const data = (event.data ?? {}) as { id?: unknown; Title?: unknown };
  if (typeof data.id !== 'string' || typeof data.Title !== 'string') {
    // A foreign or malformed event: say so, and do not retry it (it would never get better).
    context.warn(
      `TaskCreatedNotification: event ${event.id} (${event.eventType}) carries no task id and Title`,
    );
    return;
  }
  context.log(`TaskCreatedNotification: task created: ${data.Title} (id ${data.id})`);
}

app.eventGrid('TaskCreatedNotification', { handler: taskCreatedNotification });
