/** Timer every 5 minutes: the spec's background check, which only logs. */
import { app, type InvocationContext, type Timer } from '@azure/functions';

function checkTasks(timer: Timer, context: InvocationContext): void {
  context.log(`CheckTasks: checking tasks (past due: ${timer.isPastDue})`);
}

app.timer('CheckTasks', { schedule: '0 */5 * * * *', handler: checkTasks });
