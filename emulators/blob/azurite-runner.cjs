// Runs Azurite's blob service tied to the process that forked it: when that parent goes away,
// even killed outright, the IPC channel closes and Azurite shuts down instead of lingering.
// The channel is unref'd so that it does not by itself keep Azurite alive after a normal shutdown.
process.channel?.unref();
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
require('azurite/dist/src/blob/main.js');
