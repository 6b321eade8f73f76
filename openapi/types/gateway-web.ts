// Generated from the OpenAPI document by contracts/generate-types.ts (openapi-typescript); do not edit.
export interface paths {
  '/api/tasks': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Get Tasks
     * @description Retrieves the list of tasks
     */
    get: operations['get-tasks'];
    put?: never;
    /**
     * Create Task
     * @description Creates a new task
     */
    post: operations['create-task'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    Task: {
      /** Format: uuid */
      id: string;
      title: string;
      description: string | null;
      dueDate: string | null;
    };
    GatewayError: {
      statusCode: number;
      message: string;
      activityId?: string;
    };
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  'get-tasks': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description All tasks held by the web application. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example [
           *       {
           *         "id": "3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b",
           *         "title": "Write the report",
           *         "description": "Quarterly figures",
           *         "dueDate": "2026-12-01"
           *       }
           *     ]
           */
          'application/json; charset=utf-8': components['schemas']['Task'][];
        };
      };
      /** @description Subscription key absent or wrong (API Management's answer). */
      401: {
        headers: {
          /** @description On a refused subscription key, API Management's challenge: realm is the API's address at the gateway, name its key header. */
          'WWW-Authenticate'?: string;
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "statusCode": 401,
           *       "message": "Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API."
           *     }
           */
          'application/json': components['schemas']['GatewayError'] & {
            /** @enum {integer} */
            statusCode?: 401;
            /** @enum {string} */
            message?:
              | 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.'
              | 'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.';
          };
        };
      };
      /** @description The web app's own failure (its text, passed through), or the gateway could not reach it (API Management's JSON with the request's activityId). */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Internal server error. */
          'text/plain; charset=utf-8': 'Internal server error.';
          /**
           * @example {
           *       "statusCode": 500,
           *       "message": "Internal server error",
           *       "activityId": "00000000-0000-0000-0000-000000000000"
           *     }
           */
          'application/json': components['schemas']['GatewayError'];
        };
      };
    };
  };
  'create-task': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          title: string;
          description?: string;
          dueDate?: string;
        };
      };
    };
    responses: {
      /** @description The task with a new GUID in id. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "id": "3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b",
           *       "title": "Write the report",
           *       "description": "Quarterly figures",
           *       "dueDate": "2026-12-01"
           *     }
           */
          'application/json; charset=utf-8': components['schemas']['Task'];
        };
      };
      /** @description Title is required. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Title is required. */
          'text/plain; charset=utf-8':
            | 'Title is required.'
            | 'Request body is not valid JSON.'
            | 'Request body must be a JSON object.'
            | 'title, description and dueDate must be strings.';
        };
      };
      /** @description Subscription key absent or wrong (API Management's answer). */
      401: {
        headers: {
          /** @description On a refused subscription key, API Management's challenge: realm is the API's address at the gateway, name its key header. */
          'WWW-Authenticate'?: string;
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "statusCode": 401,
           *       "message": "Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API."
           *     }
           */
          'application/json': components['schemas']['GatewayError'] & {
            /** @enum {integer} */
            statusCode?: 401;
            /** @enum {string} */
            message?:
              | 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.'
              | 'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.';
          };
        };
      };
      /** @description A body over 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Request too large: the limit is 1048576 bytes. */
          'text/plain; charset=utf-8': 'Request too large: the limit is 1048576 bytes.';
        };
      };
      /** @description A content type other than application/json, text/json or application/*+json, or a charset other than UTF-8 or UTF-16. */
      415: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Content-Type must be application/json. */
          'text/plain; charset=utf-8':
            | 'Content-Type must be application/json.'
            | 'Content-Type charset must be utf-8 or utf-16.';
        };
      };
      /** @description The web app's own failure (its text, passed through), or the gateway could not reach it (API Management's JSON with the request's activityId). */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Internal server error. */
          'text/plain; charset=utf-8': 'Internal server error.';
          /**
           * @example {
           *       "statusCode": 500,
           *       "message": "Internal server error",
           *       "activityId": "00000000-0000-0000-0000-000000000000"
           *     }
           */
          'application/json': components['schemas']['GatewayError'];
        };
      };
    };
  };
}
