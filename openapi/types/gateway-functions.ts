// Generated from the OpenAPI document by contracts/generate-types.ts (openapi-typescript); do not edit.
export interface paths {
  '/managetask': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * ManageTask
     * @description Creates a task in the document database.
     */
    post: operations['ManageTask'];
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
    EncryptedTask: {
      /** Format: uuid */
      id: string;
      Title: string;
      /** Format: byte */
      Description: string | null;
      DueDate: string | null;
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
  ManageTask: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': {
          Title: string;
          Description?: string;
          DueDate?: string;
        };
      };
    };
    responses: {
      /** @description The task with its generated id; Description in its encrypted Base64 form. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "id": "3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b",
           *       "Title": "Write the report",
           *       "Description": "q3JhbmRvbWl2MTZieXRlcy4uLmNpcGhlcnRleHQ=",
           *       "DueDate": "2026-12-01"
           *     }
           */
          'application/json; charset=utf-8': components['schemas']['EncryptedTask'];
        };
      };
      /** @description Title empty or missing (or the body is not a JSON object), or a field that is not a string. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Please provide a title. */
          'text/plain; charset=utf-8':
            | 'Please provide a title.'
            | 'Title, Description and DueDate must be strings.';
        };
      };
      /** @description Subscription key absent or wrong (API Management's answer). With the opt-in validate-entra-token fragment, also a missing or invalid access token. */
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
              | 'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.'
              | 'Unauthorized. Access token is missing or invalid.';
          };
        };
      };
      /** @description The body is larger than 1 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Request too large: the limit is 1048576 bytes. */
          'text/plain; charset=utf-8': 'Request too large: the limit is 1048576 bytes.';
        };
      };
      /** @description More than 5 calls in 60 seconds (rate-limit calls=5 renewal-period=60, per subscription). Retry-After says when to try again. */
      429: {
        headers: {
          'Retry-After'?: number;
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "statusCode": 429,
           *       "message": "Rate limit is exceeded. Try again in 60 seconds."
           *     }
           */
          'application/json': components['schemas']['GatewayError'] & {
            /** @enum {integer} */
            statusCode?: 429;
            message?: string;
          };
        };
      };
      /** @description The function failed (its empty 500, passed through), or the gateway could not reach it (API Management's JSON with the request's activityId). */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
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
