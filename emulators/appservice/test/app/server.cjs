// A minimal App Service app: listens on PORT and shows the settings it was given.
const { createServer } = require('node:http');

if (process.env.CRASH_AT_START === 'true') throw new Error('this app refuses to start');
// One that is never ready: App Service waits for it to listen.
if (process.env.LISTEN !== 'never')
  createServer((req, res) => {
    if (req.url === '/broken') {
      res.writeHead(500).end();
      return;
    }
    const settings = Object.fromEntries(
      ['PORT', 'StreamHubConnection', 'Greeting', 'IDENTITY_ENDPOINT'].map((name) => [
        name,
        process.env[name],
      ]),
    );
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ settings, cwd: process.cwd() }));
  }).listen(Number(process.env.PORT), process.env.HOST);
