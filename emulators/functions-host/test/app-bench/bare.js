/** The same handler in bare node:http (the baseline): forked by the benchmark, reports its port over IPC. */
const { createServer } = require('node:http');
const { hello } = require('./handler.js');

const server = createServer(async (_req, res) => {
  const { body } = await hello();
  res
    .writeHead(200, { 'content-type': 'text/plain;charset=UTF-8', 'content-length': Buffer.byteLength(body) })
    .end(body);
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
process.on('disconnect', () => process.exit(0));
