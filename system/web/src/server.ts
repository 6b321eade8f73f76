/**
 * The entry point App Service runs (`npm start`, package.json `main`): reads the settings, builds the
 * variant they choose and listens on PORT (on HOST when given: the local App Service keeps apps on
 * loopback; in Azure it is absent and the app listens on every interface).
 */
import { createApp } from './app.ts';
import { readConfig } from './config.ts';
import { sessions } from './session.ts';
import { memoryStore } from './tasks.ts';

const config = readConfig();
const log = (line: string) => console.log(line);
const session = sessions(config.sessionSecret, config.variant);
// Each variant loads only its own SDKs (chunks of dist/): A neither Cosmos DB's nor MSAL's, B not Event Hubs'.
const app = createApp({
  config,
  sessions: session,
  store: config.variant === 'A' ? memoryStore() : (await import('./cosmos-store.ts')).cosmosStore(),
  events: config.variant === 'A' ? await (await import('./events.ts')).taskEvents(log) : undefined,
  signIn: config.signIn && (await import('./signin.ts')).signIn(config.signIn, session, log),
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
