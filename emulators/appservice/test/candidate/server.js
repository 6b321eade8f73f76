// Neither a start script nor main: App Service runs server.js.
require('../app/server.cjs');
