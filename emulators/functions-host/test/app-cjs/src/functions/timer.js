const { app } = require('@azure/functions');

app.timer('tick', {
  schedule: '0 */5 * * * *',
  handler: (timer, context) => {
    context.log(`tick isPastDue=${timer.isPastDue} last=${timer.scheduleStatus?.last ?? 'none'}`);
  },
});

// Yearly, so only its start runs it; it logs the schedule status a first start hands runOnStartup.
app.timer('startup', {
  schedule: '0 0 0 1 1 *',
  runOnStartup: true,
  handler: (timer, context) => {
    context.log(`startup isPastDue=${timer.isPastDue} status=${JSON.stringify(timer.scheduleStatus)}`);
  },
});
