/**
 * Key Vault's error responses, worded as the service words them (taken from recorded responses of the
 * real service where one was found; the report lists the few that are a best guess).
 */
export class KvError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly innerCode?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get body() {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.innerCode && { innererror: { code: this.innerCode } }),
      },
    };
  }
}

export const secretNotFound = (nameId: string) =>
  new KvError(
    404,
    'SecretNotFound',
    `A secret with (name/id) ${nameId} was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125182`,
  );

export const deletedSecretNotFound = (name: string) =>
  new KvError(404, 'SecretNotFound', `Deleted Secret not found: ${name}`);

export const secretDeletedButRecoverable = (name: string) =>
  new KvError(
    409,
    'Conflict',
    `Secret ${name} is currently in a deleted but recoverable state, and its name cannot be reused; in this state, the secret can only be recovered or purged.`,
    'ObjectIsDeletedButRecoverable',
  );

/** Key Vault's answer to bytes that are no backup of its own (the code, spaces and all, is the service's). */
export const malformedBackup = () =>
  new KvError(400, 'Malformed backup blob', 'Backup blob contains invalid or corrupt version.');

/** Restoring over a name in use; Key Vault answers 409 Conflict (the wording is a best guess). */
export const secretAlreadyExists = (name: string) =>
  new KvError(
    409,
    'Conflict',
    `Secret ${name} already exists and cannot be restored over; delete and purge it first.`,
  );

export const secretDisabled = () =>
  new KvError(403, 'Forbidden', 'Operation get is not allowed on a disabled secret.', 'SecretDisabled');

export const badParameter = (message: string) => new KvError(400, 'BadParameter', message);

export const secretTooLarge = (limit: number) =>
  new KvError(
    400,
    'BadParameter',
    `Secret is beyond the maximum permitted length of ${limit} characters.`,
    'SecretTooLarge',
  );

export const invalidName = (name: string) =>
  badParameter(`The request URI contains an invalid name: ${name}`);

export const unsupportedApiVersion = (given: string, latest: string) =>
  badParameter(
    `The specified version (${given}) is not recognized. Consider using the latest supported version (${latest}).`,
  );

/** A 401 always carries the challenge, so a client can (re)authenticate. */
export const unauthorized = (message: string, challenge: string) =>
  new KvError(401, 'Unauthorized', message, undefined, { 'WWW-Authenticate': challenge });

export const forbiddenByPolicy = (caller: string, permission: string, vault: string) =>
  new KvError(
    403,
    'Forbidden',
    `The user, group or application '${caller}' does not have secrets ${permission} permission on key vault '${vault}'. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=2125287`,
    'ForbiddenByPolicy',
  );

/** Key Vault's words, as recorded for `PUT /secrets/` (the SDK's `setSecret('')`). */
export const methodNotAllowed = (method: string) =>
  new KvError(405, 'MethodNotAllowed', `HTTP ${method} not allowed`);

export const unsupportedMediaType = (type: string) =>
  new KvError(
    415,
    'UnsupportedMediaType',
    `The request entity's media type '${type}' is not supported for this resource.`,
  );

export const requestTooLarge = () =>
  new KvError(413, 'RequestEntityTooLarge', 'The request is larger than the maximum the service accepts.');

export const notFoundPath = () => new KvError(404, 'NotFound', 'The requested resource does not exist.');
