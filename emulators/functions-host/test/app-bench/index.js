const { app } = require('@azure/functions');
const { hello } = require('./handler.js');

app.http('hello', { methods: ['GET'], authLevel: 'anonymous', handler: hello });
