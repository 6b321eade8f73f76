/**
 * The entry point App Service runs (`npm start`, package.json `main`): reads the settings, builds the
 * variant they choose and listens on PORT (on HOST when given: the local App Service keeps apps on
 * loopback; in Azure it is absent and the app listens on every interface).
 */
import { fileURLToPath } from 'node:url';
import { createApp } from './app.ts';
import { readConfig } from './config.ts';
import { cosmosStore } from './cosmos-store.ts';
import { taskEvents } from './events.ts';
import { sessions } from './session.ts';
import { signIn } from './signin.ts';
import { memoryStore } from './tasks.ts';

const config = readConfig();
const log = (line: string) => console.log(line);
const session = sessions(config.sessionSecret);
const app = createApp({
  config,
  // dist/server.js → views/
  viewsDir: fileURLToPath(new URL('../views', import.meta.url)),
  sessions: session,
  store: config.variant === 'A' ? memoryStore() : cosmosStore(),
  events: config.variant === 'A' ? taskEvents(log) : undefined,
  signIn: config.signIn && signIn(config.signIn, session, log),
  log,
});

const listening = (error?: Error) => {
  if (error) {
    console.error(`the web app cannot listen on port ${config.port}: ${error.message}`);
    process.exit(1);
  }
  log(`web app variant ${config.variant} listening on port ${config.port}`);
};
const host = process.env.HOST;
if (host) app.listen(config.port, host, listening);
else app.listen(config.port, listening);
