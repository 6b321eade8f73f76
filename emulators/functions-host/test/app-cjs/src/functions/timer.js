const { app } = require('@azure/functions');

app.timer('tick', {
  schedule: '0 */5 * * * *',
  handler: (timer, context) => {
    context.log(`tick isPastDue=${timer.isPastDue} last=${timer.scheduleStatus?.last ?? 'none'}`);
  },
});
