// A minimal App Service app: listens on PORT and shows the settings it was given.
const { createServer } = require('node:http');

if (process.env.CRASH_AT_START === 'true') throw new Error('this app refuses to start');
/** Paths answered with a status of their own (a health check path that fails, or redirects). */
const statuses = { '/broken': 500, '/moved': 302, '/missing': 404 };
// One that is never ready: App Service waits for it to listen.
if (process.env.LISTEN !== 'never')
  createServer((req, res) => {
    const status = statuses[req.url] ?? Number(process.env.EVERY_PATH_ANSWERS || 0);
    if (status) {
      res.writeHead(status, status === 302 ? { location: '/' } : {}).end();
      return;
    }
    const names = ['PORT', 'StreamHubConnection', 'Greeting', 'IDENTITY_ENDPOINT'];
    // And what App Service itself tells the app of its site.
    names.push(...Object.keys(process.env).filter((name) => /^(WEBSITE_|Greeting.)/.test(name)));
    const settings = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ settings, cwd: process.cwd() }));
  }).listen(Number(process.env.PORT), process.env.HOST);
