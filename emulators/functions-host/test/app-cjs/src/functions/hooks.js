const { app } = require('@azure/functions');

let startedBy = 'nobody';
app.hook.appStart((context) => {
  context.hookData.appLevel = true;
  startedBy = 'appStart';
});

app.hook.preInvocation((context) => {
  if (context.invocationContext.functionName !== 'hooked') return;
  context.invocationContext.extraInputs.set('fromHook', startedBy);
  context.hookData.pre = true;
});

app.hook.postInvocation((context) => {
  if (context.invocationContext.functionName !== 'hooked' || !context.hookData.pre) return;
  context.result = { ...context.result, headers: { 'x-post-hook': 'ran' } };
});

app.http('hooked', {
  handler: async (_request, context) => ({ body: String(context.extraInputs.get('fromHook')) }),
});
