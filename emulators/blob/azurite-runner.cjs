// Runs Azurite's blob service tied to the process that forked it: when that parent goes away,
// even killed outright, the IPC channel closes and Azurite shuts down instead of lingering.
// The channel is unref'd so that it does not by itself keep Azurite alive after a normal shutdown.
process.channel?.unref();
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));

// Azurite's own fix for point lookups (Azure/Azurite#2588, released in 3.36, which needs Node ≥ 21),
// applied to the 3.35 this stack runs on Node 20: LokiJS uses an index for the first property of a
// query only, and 3.35 puts `accountName` (the same for every blob) first, so each read or write of one
// blob scanned every blob of the account. As 3.36 does, a point lookup now starts with the selective
// `name` (or, for blocks without one, `blobName`); the documents found are the same.
const { Collection } = require('lokijs');
const findOne = Collection.prototype.findOne;
Collection.prototype.findOne = function (query) {
  const first = query && ('name' in query ? 'name' : 'blobName' in query ? 'blobName' : undefined);
  return findOne.call(this, first ? { [first]: query[first], ...query } : query);
};

// Azurite finds each request's operation by matching its path against the URI template of every
// operation with its method, compiling each template anew per request: a third of its CPU per request.
// A match is a pure function of the path and the template's text, so each template is compiled once,
// and a request's path is matched once per distinct template (an upload's 33 candidate operations
// share one): the matches are the same.
const uriTemplate = require('uri-templates');
const utils = require('azurite/dist/src/blob/generated/utils/utils.js');
const compiled = new Map();
let matchesOf = { url: '', byTemplate: new Map() };
utils.isURITemplateMatch = (url, template) => {
  if (matchesOf.url !== url) matchesOf = { url, byTemplate: new Map() };
  let matches = matchesOf.byTemplate.get(template);
  if (matches === undefined) {
    if (!compiled.has(template)) compiled.set(template, uriTemplate(template));
    const result = compiled.get(template).fromUri(url, { strict: true });
    matches = result !== undefined && Object.values(result).every((value) => value !== '');
    matchesOf.byTemplate.set(template, matches);
  }
  return matches;
};

// A SharedKey signature that matches neither account key: Azure answers 403 AuthenticationFailed; Azurite
// says AuthorizationFailure, Azure's code for a request its network rules refuse, which az then reports
// as such ("The request may be blocked by network rules") instead of as a wrong key.
const { default: SharedKey } = require('azurite/dist/src/blob/authentication/BlobSharedKeyAuthenticator.js');
const { default: StorageErrors } = require('azurite/dist/src/blob/errors/StorageErrorFactory.js');
const validateSharedKey = SharedKey.prototype.validate;
SharedKey.prototype.validate = async function (req, context) {
  const pass = await validateSharedKey.call(this, req, context);
  if (pass !== false) return pass;
  const signature = req.getHeader('authorization').split(':').pop();
  throw StorageErrors.getAuthenticationFailed(
    context.contextId,
    `The MAC signature found in the HTTP request '${signature}' is not the same as any computed signature.`,
  );
};

// The blob events the Functions host's blob trigger subscribes to (blob-events.cjs), on Azurite's server.
const http = require('node:http');
const { serveBlobEvents } = require('./blob-events.cjs');
const createServer = http.createServer;
http.createServer = (...args) => {
  const server = createServer(...args);
  serveBlobEvents(server);
  return server;
};

require('azurite/dist/src/blob/main.js');

// Azurite's modules are loaded: keep V8's code for them (when run by run-cached.cjs; see azurite.ts).
globalThis[Symbol.for('taskstack.saveCodeCache')]?.();
