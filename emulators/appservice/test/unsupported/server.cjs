require('../app/server.cjs');
