/**
 * The system's own types against the types generated from the OpenAPI documents: a document and the
 * code that answers it must describe the same bodies, or `tsc` (npm run lint) fails right here.
 */

import type { components as Functions } from '../openapi/types/functions.ts';
import type { components as GatewayFunctions } from '../openapi/types/gateway-functions.ts';
import type { components as GatewayWeb } from '../openapi/types/gateway-web.ts';
import type { components as Web } from '../openapi/types/web.ts';
import type { TaskFields } from '../system/functions/src/lib/task.ts';
import type { Task as WebTask } from '../system/web/src/tasks.ts';

/** true when each type is assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type FunctionSchemas = Functions['schemas'];

/** Each entry compiles only while its pair agrees. */
export const AGREEMENTS: {
  createTaskAnswer: Same<FunctionSchemas['BlobTask'], { Id: string } & TaskFields>;
  manageTaskAnswer: Same<FunctionSchemas['Task'], { id: string } & TaskFields>;
  manageTaskStored: Same<FunctionSchemas['EncryptedTask'], { id: string } & TaskFields>;
  gatewayManageTask: Same<GatewayFunctions['schemas']['EncryptedTask'], FunctionSchemas['EncryptedTask']>;
  webTask: Same<Web['schemas']['Task'], WebTask>;
  gatewayWebTask: Same<GatewayWeb['schemas']['Task'], WebTask>;
} = {
  createTaskAnswer: true,
  manageTaskAnswer: true,
  manageTaskStored: true,
  gatewayManageTask: true,
  webTask: true,
  gatewayWebTask: true,
};
