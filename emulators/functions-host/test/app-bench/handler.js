/** The benchmark's handler, shared by the function app and the bare node:http baseline. */
exports.hello = async () => ({ body: 'Hello, world' });
