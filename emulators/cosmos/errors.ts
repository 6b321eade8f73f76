/**
 * Cosmos DB's error answers: `{ code, message }` JSON with the service's own texts. Real messages end
 * with the request's activity id and the backend version; we append the same tail when sending.
 */
export class CosmosError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly substatus?: number,
  ) {
    super(message);
  }
}

export interface SqlError {
  start: number;
  end: number;
  code?: string;
  message: string;
}

const NOT_FOUND_TSG = 'More info: https://aka.ms/cosmosdb-tsg-not-found';

export const errors = {
  /** A database, container or unknown address: the gateway's generic not-found text. */
  resourceNotFound: () =>
    new CosmosError(404, 'NotFound', 'Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found'),
  itemNotFound: () =>
    new CosmosError(
      404,
      'NotFound',
      `Entity with the specified id does not exist in the system. ${NOT_FOUND_TSG}`,
    ),
  conflict: () =>
    new CosmosError(409, 'Conflict', 'Entity with the specified id already exists in the system.'),
  preconditionFailed: () =>
    new CosmosError(
      412,
      'PreconditionFailed',
      'Operation cannot be performed because one of the specified precondition is not met.',
    ),
  tooLarge: () => new CosmosError(413, 'RequestEntityTooLarge', 'Request size is too large.'),
  badRequest: (message: string) => new CosmosError(400, 'BadRequest', message),
  /** The body's partition key is not the request's (substatus 1001); the service escapes '/' in its JSON. */
  wrongPartitionKey: () =>
    new CosmosError(
      400,
      'BadRequest',
      'Message: {"Errors":["PartitionKey extracted from document doesn\'t match the one specified in the header. Learn more: https:\\/\\/aka.ms\\/CosmosDB\\/sql\\/errors\\/wrong-pk-value"]}',
      1001,
    ),
  /** A query's errors: Cosmos lists them as JSON inside the message, each with the offending span. */
  sql: (...list: SqlError[]) =>
    errors.badRequest(
      `Message: ${JSON.stringify({ errors: list.map(({ start, end, code, message }) => ({ severity: 'Error', location: { start, end }, ...(code && { code }), message })) })}`,
    ),
  invalidPayload: () =>
    new CosmosError(
      400,
      'BadRequest',
      'Message: {"Errors":["The request payload is invalid. Ensure to provide a valid request payload."]}',
    ),
  methodNotAllowed: () => new CosmosError(405, 'MethodNotAllowed', 'Request method is not supported.'),
  unsupportedMediaType: () => new CosmosError(415, 'UnsupportedMediaType', 'Unsupported Media Type'),
  missingAuthorization: () =>
    new CosmosError(
      401,
      'Unauthorized',
      'Required Header authorization is missing. Ensure a valid Authorization token is passed.',
    ),
  /** The MAC did not verify; like Cosmos, show the payload the server signed (it holds no secret). */
  badSignature: (payload: string) =>
    new CosmosError(
      401,
      'Unauthorized',
      "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-mac-signature. " +
        `Server used the following payload to sign: '${payload}'`,
    ),
  badToken: () =>
    new CosmosError(
      401,
      'Unauthorized',
      "The input authorization token can't serve the request. Please check that the expected payload is built as per the protocol, and check the key being used. For more info: https://aka.ms/cosmosdb-tsg-mac-signature",
    ),
  /** A Microsoft Entra token on a control-plane operation (creating or deleting databases and containers). */
  aadControlPlane: (account: string, verb: string, path: string) =>
    new CosmosError(
      403,
      'Forbidden',
      `Request blocked by Auth ${account} : The given request [${verb} ${path}] cannot be authorized by AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac.`,
      5300,
    ),
  rbacDenied: (account: string, principalId: string, action: string, resource: string) =>
    new CosmosError(
      403,
      'Forbidden',
      `Request blocked by Auth ${account} : Request is blocked because principal [${principalId}] does not have required RBAC permissions to perform action [${action}] on resource [${resource}]. Learn more: https://aka.ms/cosmos-native-rbac.`,
      5301,
    ),
};

/** The body Cosmos sends, with the tail every real error message carries. */
export function errorBody(error: CosmosError, activityId: string) {
  return {
    code: error.code,
    message: `${error.message}\r\nActivityId: ${activityId}, Microsoft.Azure.Documents.Common/2.14.0`,
  };
}
