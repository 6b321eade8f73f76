// Generated from the OpenAPI document by contracts/generate-types.ts (openapi-typescript); do not edit.
export interface paths {
  '/api/tasks': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** All tasks held by the web application. */
    get: operations['ListTasks'];
    put?: never;
    /** Creates a task with a new GUID id. */
    post: operations['CreateTask'];
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
    TaskInput: {
      title: string;
      description?: string | null;
      dueDate?: string | null;
    };
    Task: {
      /** Format: uuid */
      id: string;
      title: string;
      description: string | null;
      dueDate: string | null;
    };
  };
  responses: {
    /** @description Variant B without a signed-in user. */
    SignInRequired: {
      headers: {
        [name: string]: unknown;
      };
      content: {
        /** @example Sign-in required. */
        'text/plain; charset=utf-8': 'Sign-in required.';
      };
    };
    /** @description Variant B: the vault or the database unreachable or refusing. */
    StoreUnavailable: {
      headers: {
        [name: string]: unknown;
      };
      content: {
        /** @example The task store is unavailable. Try again later. */
        'text/plain; charset=utf-8': 'The task store is unavailable. Try again later.';
      };
    };
    /** @description Anything else; the reason goes to the log. */
    Failed: {
      headers: {
        [name: string]: unknown;
      };
      content: {
        /** @example Internal server error. */
        'text/plain; charset=utf-8': 'Internal server error.';
      };
    };
  };
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
  ListTasks: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The tasks. */
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
      401: components['responses']['SignInRequired'];
      500: components['responses']['Failed'];
      503: components['responses']['StoreUnavailable'];
    };
  };
  CreateTask: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['TaskInput'];
        'text/json': components['schemas']['TaskInput'];
        'application/*+json': components['schemas']['TaskInput'];
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
      /** @description title empty or missing; a body that is not JSON, not an object, or a field that is not a string. */
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
      401: components['responses']['SignInRequired'];
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
      500: components['responses']['Failed'];
      503: components['responses']['StoreUnavailable'];
    };
  };
}
