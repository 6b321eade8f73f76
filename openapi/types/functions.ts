// Generated from the OpenAPI document by contracts/generate-types.ts (openapi-typescript); do not edit.
export interface paths {
  '/api/createtask': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Creates a task as the JSON blob tasks/<Id>.json (create-only variant). */
    post: operations['CreateTask'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/managetask': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Reads a task from TasksDB/Tasks with Description decrypted. */
    get: operations['ManageTaskRead'];
    put?: never;
    /** Creates a task in TasksDB/Tasks; Description is stored encrypted. */
    post: operations['ManageTaskCreate'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/uploadattachment': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Stores the first file part as blob attachments/<taskId>/<file name> with metadata TaskId. */
    post: operations['UploadAttachment'];
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/getattachment': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** An attachment's TaskId metadata, content type and address. */
    get: operations['GetAttachment'];
    put?: never;
    post?: never;
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
      Title: string;
      Description?: string | null;
      DueDate?: string | null;
    };
    Task: {
      /** Format: uuid */
      id: string;
      Title: string;
      Description: string | null;
      DueDate: string | null;
    };
    EncryptedTask: {
      /** Format: uuid */
      id: string;
      Title: string;
      /**
       * Format: byte
       * @description Base64 of the 16-byte IV followed by the AES-256 ciphertext.
       */
      Description: string | null;
      DueDate: string | null;
    };
    BlobTask: {
      /** Format: uuid */
      Id: string;
      Title: string;
      Description: string | null;
      DueDate: string | null;
    };
    Attachment: {
      /** @description null when the blob has no TaskId metadata. */
      TaskId: string | null;
      ContentType: string | null;
      /** Format: uri */
      Uri: string;
    };
  };
  responses: {
    /** @description Function key absent or wrong (answered by the host). Empty body. */
    KeyRejected: {
      headers: {
        [name: string]: unknown;
      };
      content?: never;
    };
    /** @description A failure of the vault, the database or storage (the reason goes to the log). Empty body. */
    Failed: {
      headers: {
        [name: string]: unknown;
      };
      content?: never;
    };
    /** @description The body is larger than 1 MiB. */
    TaskTooLarge: {
      headers: {
        [name: string]: unknown;
      };
      content: {
        /** @example Request too large: the limit is 1048576 bytes. */
        'text/plain; charset=utf-8': 'Request too large: the limit is 1048576 bytes.';
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
  CreateTask: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** @description Field names are read case-insensitively. */
    requestBody: {
      content: {
        'application/json': components['schemas']['TaskInput'];
      };
    };
    responses: {
      /** @description The task with its generated Id. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "Id": "3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b",
           *       "Title": "Write the report",
           *       "Description": "Quarterly figures",
           *       "DueDate": "2026-12-01"
           *     }
           */
          'application/json; charset=utf-8': components['schemas']['BlobTask'];
        };
      };
      /** @description Body missing or unparsable into a task, or Title empty. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Please provide a valid task with a title. */
          'text/plain; charset=utf-8': 'Please provide a valid task with a title.';
        };
      };
      401: components['responses']['KeyRejected'];
      413: components['responses']['TaskTooLarge'];
      500: components['responses']['Failed'];
    };
  };
  ManageTaskRead: {
    parameters: {
      query: {
        taskId: string;
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The task, Description decrypted. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "id": "3f2b8c1e-4a5d-4e6f-8a9b-0c1d2e3f4a5b",
           *       "Title": "Write the report",
           *       "Description": "Quarterly figures",
           *       "DueDate": "2026-12-01"
           *     }
           */
          'application/json; charset=utf-8': components['schemas']['Task'];
        };
      };
      /** @description taskId missing. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Please provide taskId. */
          'text/plain; charset=utf-8': 'Please provide taskId.';
        };
      };
      401: components['responses']['KeyRejected'];
      /** @description No document with that id. Empty body. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      500: components['responses']['Failed'];
    };
  };
  ManageTaskCreate: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'application/json': components['schemas']['TaskInput'];
      };
    };
    responses: {
      /** @description The task with its generated id; Description in its encrypted Base64 form (IV + ciphertext). */
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
      401: components['responses']['KeyRejected'];
      413: components['responses']['TaskTooLarge'];
      500: components['responses']['Failed'];
    };
  };
  UploadAttachment: {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody: {
      content: {
        'multipart/form-data': {
          /** Format: binary */
          file: string;
          taskId: string;
        };
      };
    };
    responses: {
      /** @description File uploaded: <taskId>/<file name> */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example File uploaded: 42/notes.txt */
          'text/plain; charset=utf-8': string;
        };
      };
      /** @description Not a form content type; no file or no taskId; a taskId or file name that cannot name a blob. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Please provide a file and taskId. */
          'text/plain; charset=utf-8':
            | 'Please send a multipart form.'
            | 'Please provide a file and taskId.'
            | 'Invalid taskId: use 1 to 255 printable ASCII characters, without / or \\, without leading or trailing spaces, not ending with a dot.'
            | 'Invalid file name: use 1 to 255 characters, without /, \\ or control characters, without leading or trailing spaces, not ending with a dot.';
        };
      };
      401: components['responses']['KeyRejected'];
      /** @description The request is larger than 10 MiB. */
      413: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Request too large: the limit is 10485760 bytes. */
          'text/plain; charset=utf-8': 'Request too large: the limit is 10485760 bytes.';
        };
      };
      /** @description StorageConnection missing or empty: empty body. Any other failure: text beginning Error uploading file: followed by the failure message. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Error uploading file: connect ECONNREFUSED 127.0.0.1:10000 */
          'text/plain; charset=utf-8': string;
        };
      };
    };
  };
  GetAttachment: {
    parameters: {
      query: {
        taskId: string;
        fileName: string;
      };
      header?: never;
      path?: never;
      cookie?: never;
    };
    requestBody?: never;
    responses: {
      /** @description The blob's properties. */
      200: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /**
           * @example {
           *       "TaskId": "42",
           *       "ContentType": "text/plain",
           *       "Uri": "https://account.blob.core.windows.net/attachments/42/notes.txt"
           *     }
           */
          'application/json; charset=utf-8': components['schemas']['Attachment'];
        };
      };
      /** @description taskId or fileName missing, or a name that cannot name a blob. */
      400: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Please provide taskId and fileName. */
          'text/plain; charset=utf-8':
            | 'Please provide taskId and fileName.'
            | 'Invalid taskId: use 1 to 255 printable ASCII characters, without / or \\, without leading or trailing spaces, not ending with a dot.'
            | 'Invalid file name: use 1 to 255 characters, without /, \\ or control characters, without leading or trailing spaces, not ending with a dot.';
        };
      };
      401: components['responses']['KeyRejected'];
      /** @description The blob does not exist. Empty body. */
      404: {
        headers: {
          [name: string]: unknown;
        };
        content?: never;
      };
      /** @description StorageConnection missing or empty: empty body. Any other failure: text beginning Error retrieving file metadata: followed by the failure message. */
      500: {
        headers: {
          [name: string]: unknown;
        };
        content: {
          /** @example Error retrieving file metadata: connect ECONNREFUSED 127.0.0.1:10000 */
          'text/plain; charset=utf-8': string;
        };
      };
    };
  };
}
