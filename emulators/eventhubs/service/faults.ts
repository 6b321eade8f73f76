/**
 * The errors Event Hubs answers with, as AMQP error conditions and the service's own texts. The protocol
 * layer sends them as a link detach, a rejected delivery or a management/CBS status.
 */
export class Fault extends Error {
  constructor(
    readonly condition: string,
    readonly description: string,
    /** Status code when the fault answers a $management or $cbs request. */
    readonly status: number,
  ) {
    super(description);
  }
}

export const entityNotFound = (resource: string) =>
  new Fault(
    'amqp:not-found',
    `The messaging entity '${resource}' could not be found. To know more visit https://aka.ms/sbResourceMgrExceptions.`,
    404,
  );

export const partitionOutOfRange = (partitionCount: number) =>
  new Fault(
    'com.microsoft:argument-out-of-range',
    `The specified partition is invalid for an EventHub partition sender or receiver. It should be between 0 and ${partitionCount - 1}.\r\nParameter name: PartitionId`,
    400,
  );

export const argumentError = (description: string) =>
  new Fault('com.microsoft:argument-error', description, 400);

export const unauthorized = (description: string) => new Fault('amqp:unauthorized-access', description, 401);

export const missingClaim = (claim: 'Send' | 'Listen' | 'Manage', resource: string) =>
  unauthorized(
    `Unauthorized access. '${claim}' claim(s) are required to perform this operation. Resource: '${resource}'.`,
  );

export const messageTooLarge = (deliveryId: number, size: number, limit: number) =>
  new Fault(
    'amqp:link:message-size-exceeded',
    `The received message (delivery-id:${deliveryId}, size:${size} bytes) exceeds the limit (${limit} bytes) currently allowed on the link.`,
    413,
  );

export const decodeError = (description: string) => new Fault('amqp:decode-error', description, 400);

export const linkStolen = (description: string) => new Fault('amqp:link:stolen', description, 410);

export const tooManyReceivers = (limit: number, names: string[]) =>
  new Fault(
    'amqp:resource-limit-exceeded',
    `Exceeded the maximum number of allowed receivers per partition in a consumer group which is ${limit}. List of connected receivers - ${names.join(', ')}.`,
    403,
  );
