/**
 * The documented-status table as data: the spec's Errors table, the success rows of its endpoint
 * tables and the answers the apps document beyond it, one row per condition, at the backends and again
 * through the gateway where the operation is published. Rows run in order; a row may remember what a
 * later row needs (the id of a created task). Adding a row is all it takes to cover a new case.
 */

import type { Need, Target } from './target.ts';
import type { Method, Surface } from './validate.ts';

export interface Request {
  url: string;
  init?: RequestInit;
}

export interface Row {
  name: string;
  surface: Surface;
  method: Method;
  /** The path as its document names it. */
  path: string;
  needs: Need[];
  request: (target: Target, memo: Memo) => Request;
  status: number;
  /** The exact body; a RegExp for a body that carries generated values; '' for an empty body. */
  body?: string | RegExp;
  /** Checks beyond the document's schema (the echo of what was sent); throws when wrong. */
  check?: (body: string, memo: Memo) => void;
  remember?: (body: string, memo: Memo) => void;
  /** Run before the request (the rate limit's window is moved past before and after its rows). */
  before?: 'advanceClock';
  /**
   * The earlier row whose pass this one needs to mean anything: the one that made what it reads, or,
   * for an empty 404, the one whose documented text shows the request reached the function (a wrong
   * address answers an empty 404 too).
   */
  reliesOn?: string;
}

export type Memo = Record<string, string>;

const MIB = 1024 * 1024;
const JSON_HEADERS = { 'content-type': 'application/json' };
const ATTACHMENT_TASK = `contract-${Date.now()}`;
const WRONG_KEY = 'not-the-key';

const fn = (t: Target, path: string, query = '', key = t.functionKey) =>
  `${t.baseUrl}${path}?${query ? `${query}&` : ''}code=${encodeURIComponent(key ?? '')}`;
const post = (body: BodyInit, headers: Record<string, string> = JSON_HEADERS): RequestInit => ({
  method: 'POST',
  headers,
  body,
});
const json = (value: unknown) => post(JSON.stringify(value));
const gatewayHeaders = (t: Target, key = t.subscriptionKey) => ({
  ...JSON_HEADERS,
  'Ocp-Gateway-Subscription-Key': key ?? '',
});
const upload = (taskId: string | undefined, file?: Blob) => {
  const form = new FormData();
  if (taskId !== undefined) form.set('taskId', taskId);
  if (file) form.set('file', file, 'notes.txt');
  return { method: 'POST', body: form } satisfies RequestInit;
};
const expectEqual = (what: string, actual: unknown, expected: unknown) => {
  if (actual !== expected)
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
};
const apimError = (status: number, message: string) =>
  `{ "statusCode": ${status}, "message": ${JSON.stringify(message)} }`;
const MISSING_KEY =
  'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.';
const INVALID_KEY =
  'Access denied due to invalid subscription key. Make sure to provide a valid key for an active subscription.';

const FUNCTIONS: Need[] = ['baseUrl', 'functionKey'];
const WEB: Need[] = ['webBaseUrl'];
const GATEWAY: Need[] = ['gatewayUrl', 'subscriptionKey'];

/** One row per way of meeting a condition that gets the same status and text. */
const variants = (
  condition: Omit<Row, 'request'>,
  ways: readonly (readonly [string, Row['request']])[],
): Row[] =>
  ways.map(([way, request]) => ({
    ...condition,
    name: `${condition.name}: ${way} → ${condition.status}`,
    request,
  }));

const functionRows: Row[] = [
  ...variants(
    {
      name: 'createtask',
      surface: 'functions',
      method: 'post',
      path: '/api/createtask',
      needs: FUNCTIONS,
      status: 400,
      body: 'Please provide a valid task with a title.',
    },
    [
      ['no body', (t) => ({ url: fn(t, '/api/createtask'), init: { method: 'POST' } })],
      ['unparsable body', (t) => ({ url: fn(t, '/api/createtask'), init: post('{not json') })],
      ['empty Title', (t) => ({ url: fn(t, '/api/createtask'), init: json({ Title: '' }) })],
    ],
  ),
  {
    name: 'createtask: a task (names read case-insensitively) → 200',
    surface: 'functions',
    method: 'post',
    path: '/api/createtask',
    needs: FUNCTIONS,
    request: (t) => ({
      url: fn(t, '/api/createtask'),
      init: json({ title: 'contract blob', DueDate: 'soon' }),
    }),
    status: 200,
    check: (body) => {
      const task = JSON.parse(body);
      expectEqual('Title', task.Title, 'contract blob');
      expectEqual('DueDate', task.DueDate, 'soon');
    },
  },
  {
    name: 'createtask: body over 1 MiB → 413',
    surface: 'functions',
    method: 'post',
    path: '/api/createtask',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/createtask'), init: json({ Title: 'x'.repeat(MIB) }) }),
    status: 413,
    body: 'Request too large: the limit is 1048576 bytes.',
  },
  {
    name: 'createtask: no function key → 401',
    surface: 'functions',
    method: 'post',
    path: '/api/createtask',
    needs: ['baseUrl'],
    request: (t) => ({ url: `${t.baseUrl}/api/createtask`, init: json({ Title: 'no key' }) }),
    status: 401,
    body: '',
  },
  ...variants(
    {
      name: 'managetask POST',
      surface: 'functions',
      method: 'post',
      path: '/api/managetask',
      needs: FUNCTIONS,
      status: 400,
      body: 'Please provide a title.',
    },
    [
      ['Title missing', (t) => ({ url: fn(t, '/api/managetask'), init: json({ Description: 'no title' }) })],
      [
        'Title empty',
        (t) => ({ url: fn(t, '/api/managetask'), init: json({ Title: '', Description: 'empty' }) }),
      ],
    ],
  ),
  {
    name: 'managetask POST: a Title that is not a string → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/managetask',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/managetask'), init: json({ Title: 5 }) }),
    status: 400,
    body: 'Title, Description and DueDate must be strings.',
  },
  {
    name: 'managetask POST: a task → 200, Description encrypted',
    surface: 'functions',
    method: 'post',
    path: '/api/managetask',
    needs: FUNCTIONS,
    request: (t) => ({
      url: fn(t, '/api/managetask'),
      init: json({ Title: 'contract doc', Description: 'secret words', DueDate: '2030-01-01' }),
    }),
    status: 200,
    check: (body) => {
      const task = JSON.parse(body);
      expectEqual('Title', task.Title, 'contract doc');
      if (task.Description === 'secret words') throw new Error('Description came back in plain text');
    },
    remember: (body, memo) => {
      memo.taskId = JSON.parse(body).id;
    },
  },
  {
    name: 'managetask POST: wrong function key → 401',
    surface: 'functions',
    method: 'post',
    path: '/api/managetask',
    needs: ['baseUrl'],
    request: (t) => ({ url: fn(t, '/api/managetask', '', WRONG_KEY), init: json({ Title: 'wrong key' }) }),
    status: 401,
    body: '',
  },
  {
    name: 'managetask GET: taskId missing → 400',
    surface: 'functions',
    method: 'get',
    path: '/api/managetask',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/managetask') }),
    status: 400,
    body: 'Please provide taskId.',
  },
  {
    name: 'managetask GET: no such document → 404',
    reliesOn: 'managetask GET: taskId missing → 400',
    surface: 'functions',
    method: 'get',
    path: '/api/managetask',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/managetask', 'taskId=00000000-0000-0000-0000-000000000000') }),
    status: 404,
    body: '',
  },
  {
    name: 'managetask GET: the created task → 200, Description decrypted',
    reliesOn: 'managetask POST: a task → 200, Description encrypted',
    surface: 'functions',
    method: 'get',
    path: '/api/managetask',
    needs: FUNCTIONS,
    request: (t, memo) => ({ url: fn(t, '/api/managetask', `taskId=${memo.taskId}`) }),
    status: 200,
    check: (body, memo) => {
      const task = JSON.parse(body);
      expectEqual('id', task.id, memo.taskId);
      expectEqual('Description', task.Description, 'secret words');
    },
  },
  {
    name: 'uploadattachment: not a form → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/uploadattachment'), init: json({ taskId: 'x' }) }),
    status: 400,
    body: 'Please send a multipart form.',
  },
  {
    name: 'uploadattachment: no file → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/uploadattachment'), init: upload(ATTACHMENT_TASK) }),
    status: 400,
    body: 'Please provide a file and taskId.',
  },
  {
    name: 'uploadattachment: no taskId → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/uploadattachment'), init: upload(undefined, new Blob(['hi'])) }),
    status: 400,
    body: 'Please provide a file and taskId.',
  },
  {
    name: 'uploadattachment: a taskId that cannot name a blob → 400',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/uploadattachment'), init: upload('a/b', new Blob(['hi'])) }),
    status: 400,
    body: 'Invalid taskId: use 1 to 255 printable ASCII characters, without / or \\, without leading or trailing spaces, not ending with a dot.',
  },
  {
    name: 'uploadattachment: a file → 200',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({
      url: fn(t, '/api/uploadattachment'),
      init: upload(ATTACHMENT_TASK, new Blob(['contract attachment'], { type: 'text/plain' })),
    }),
    status: 200,
    body: `File uploaded: ${ATTACHMENT_TASK}/notes.txt`,
  },
  {
    name: 'uploadattachment: request over 10 MiB → 413',
    surface: 'functions',
    method: 'post',
    path: '/api/uploadattachment',
    needs: FUNCTIONS,
    request: (t) => ({
      url: fn(t, '/api/uploadattachment'),
      init: upload(ATTACHMENT_TASK, new Blob([new Uint8Array(10 * MIB + 1)])),
    }),
    status: 413,
    body: 'Request too large: the limit is 10485760 bytes.',
  },
  ...variants(
    {
      name: 'getattachment',
      surface: 'functions',
      method: 'get',
      path: '/api/getattachment',
      needs: FUNCTIONS,
      status: 400,
      body: 'Please provide taskId and fileName.',
    },
    [
      ['fileName missing', (t) => ({ url: fn(t, '/api/getattachment', `taskId=${ATTACHMENT_TASK}`) })],
      ['taskId missing', (t) => ({ url: fn(t, '/api/getattachment', 'fileName=notes.txt') })],
    ],
  ),
  {
    name: 'getattachment: a file name that cannot name a blob → 400',
    surface: 'functions',
    method: 'get',
    path: '/api/getattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/getattachment', `taskId=${ATTACHMENT_TASK}&fileName=..`) }),
    status: 400,
    body: 'Invalid file name: use 1 to 255 characters, without /, \\ or control characters, without leading or trailing spaces, not ending with a dot.',
  },
  {
    name: 'getattachment: no such blob → 404',
    reliesOn: 'getattachment: a file name that cannot name a blob → 400',
    surface: 'functions',
    method: 'get',
    path: '/api/getattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/getattachment', `taskId=${ATTACHMENT_TASK}&fileName=absent.txt`) }),
    status: 404,
    body: '',
  },
  {
    name: 'getattachment: the uploaded file → 200',
    reliesOn: 'uploadattachment: a file → 200',
    surface: 'functions',
    method: 'get',
    path: '/api/getattachment',
    needs: FUNCTIONS,
    request: (t) => ({ url: fn(t, '/api/getattachment', `taskId=${ATTACHMENT_TASK}&fileName=notes.txt`) }),
    status: 200,
    check: (body) => {
      const attachment = JSON.parse(body);
      expectEqual('TaskId', attachment.TaskId, ATTACHMENT_TASK);
      expectEqual('ContentType', attachment.ContentType, 'text/plain');
      if (!String(attachment.Uri).endsWith(`/attachments/${ATTACHMENT_TASK}/notes.txt`))
        throw new Error(`Uri ${attachment.Uri} does not name the blob`);
    },
  },
];

const webRows: Row[] = [
  ...(
    [
      ['unparsable JSON', '{"title": ', 'Request body is not valid JSON.'],
      ['JSON that is not an object', '["a title"]', 'Request body must be a JSON object.'],
      ['a title that is not a string', '{"title": 5}', 'title, description and dueDate must be strings.'],
    ] as const
  ).map(
    ([what, body, text]): Row => ({
      name: `web POST /api/tasks: ${what} → 400`,
      surface: 'web',
      method: 'post',
      path: '/api/tasks',
      needs: WEB,
      request: (t) => ({ url: `${t.webBaseUrl}/api/tasks`, init: post(body) }),
      status: 400,
      body: text,
    }),
  ),
  ...(['get', 'post'] as const).map(
    (method): Row => ({
      name: `web app B ${method.toUpperCase()} /api/tasks: not signed in → 401`,
      surface: 'web',
      method,
      path: '/api/tasks',
      needs: ['webBBaseUrl'],
      request: (t) => ({
        url: `${t.webBBaseUrl}/api/tasks`,
        init: method === 'post' ? json({ title: 'not signed in' }) : undefined,
      }),
      status: 401,
      body: 'Sign-in required.',
    }),
  ),
  ...variants(
    {
      name: 'web POST /api/tasks',
      surface: 'web',
      method: 'post',
      path: '/api/tasks',
      needs: WEB,
      status: 400,
      body: 'Title is required.',
    },
    [
      [
        'title missing',
        (t) => ({ url: `${t.webBaseUrl}/api/tasks`, init: json({ description: 'no title' }) }),
      ],
      [
        'title empty',
        (t) => ({ url: `${t.webBaseUrl}/api/tasks`, init: json({ title: '', description: 'empty' }) }),
      ],
    ],
  ),
  {
    name: 'web POST /api/tasks: another content type → 415',
    surface: 'web',
    method: 'post',
    path: '/api/tasks',
    needs: WEB,
    request: (t) => ({
      url: `${t.webBaseUrl}/api/tasks`,
      init: post('title=x', { 'content-type': 'text/plain' }),
    }),
    status: 415,
    body: 'Content-Type must be application/json.',
  },
  {
    name: 'web POST /api/tasks: body over 1 MiB → 413',
    surface: 'web',
    method: 'post',
    path: '/api/tasks',
    needs: WEB,
    request: (t) => ({ url: `${t.webBaseUrl}/api/tasks`, init: json({ title: 'x'.repeat(MIB) }) }),
    status: 413,
    body: 'Request too large: the limit is 1048576 bytes.',
  },
  {
    name: 'web POST /api/tasks: a task → 200',
    surface: 'web',
    method: 'post',
    path: '/api/tasks',
    needs: WEB,
    request: (t) => ({
      url: `${t.webBaseUrl}/api/tasks`,
      init: json({ title: 'contract web', dueDate: 'today' }),
    }),
    status: 200,
    check: (body) => expectEqual('title', JSON.parse(body).title, 'contract web'),
    remember: (body, memo) => {
      memo.webTaskId = JSON.parse(body).id;
    },
  },
  {
    name: 'web GET /api/tasks → 200 with the created task',
    reliesOn: 'web POST /api/tasks: a task → 200',
    surface: 'web',
    method: 'get',
    path: '/api/tasks',
    needs: WEB,
    request: (t) => ({ url: `${t.webBaseUrl}/api/tasks` }),
    status: 200,
    check: (body, memo) => {
      if (!JSON.parse(body).some((task: { id: string }) => task.id === memo.webTaskId))
        throw new Error(`the list lacks the task ${memo.webTaskId}`);
    },
  },
];

const gatewayRows: Row[] = [
  {
    name: 'gateway managetask: no subscription key → 401',
    surface: 'gatewayFunctions',
    method: 'post',
    path: '/managetask',
    needs: ['gatewayUrl'],
    request: (t) => ({ url: `${t.gatewayUrl}/functions/managetask`, init: json({ Title: 'no key' }) }),
    status: 401,
    body: apimError(401, MISSING_KEY),
  },
  {
    name: 'gateway managetask: wrong subscription key → 401',
    surface: 'gatewayFunctions',
    method: 'post',
    path: '/managetask',
    needs: ['gatewayUrl'],
    request: (t) => ({
      url: `${t.gatewayUrl}/functions/managetask`,
      init: post(JSON.stringify({ Title: 'wrong key' }), gatewayHeaders(t, WRONG_KEY)),
    }),
    status: 401,
    body: apimError(401, INVALID_KEY),
  },
  {
    name: 'gateway managetask: Title missing → 400',
    surface: 'gatewayFunctions',
    method: 'post',
    path: '/managetask',
    needs: GATEWAY,
    before: 'advanceClock',
    request: (t) => ({ url: `${t.gatewayUrl}/functions/managetask`, init: post('{}', gatewayHeaders(t)) }),
    status: 400,
    body: 'Please provide a title.',
  },
  {
    name: 'gateway managetask: a task → 200',
    surface: 'gatewayFunctions',
    method: 'post',
    path: '/managetask',
    needs: GATEWAY,
    request: (t) => ({
      url: `${t.gatewayUrl}/functions/managetask`,
      init: post(JSON.stringify({ Title: 'contract gateway' }), gatewayHeaders(t)),
    }),
    status: 200,
    check: (body) => expectEqual('Title', JSON.parse(body).Title, 'contract gateway'),
  },
  // Two calls above, three here: the window's five. The next is over the limit.
  ...[3, 4, 5].map(
    (call): Row => ({
      name: `gateway managetask: call ${call} of 5 in the window → 400`,
      surface: 'gatewayFunctions',
      method: 'post',
      path: '/managetask',
      needs: GATEWAY,
      request: (t) => ({ url: `${t.gatewayUrl}/functions/managetask`, init: post('{}', gatewayHeaders(t)) }),
      status: 400,
      body: 'Please provide a title.',
    }),
  ),
  {
    name: 'gateway managetask: a sixth call within 60 s → 429',
    surface: 'gatewayFunctions',
    method: 'post',
    path: '/managetask',
    needs: GATEWAY,
    request: (t) => ({ url: `${t.gatewayUrl}/functions/managetask`, init: post('{}', gatewayHeaders(t)) }),
    status: 429,
    body: /^\{ "statusCode": 429, "message": "Rate limit is exceeded\. Try again in \d+ seconds\." \}$/,
  },
  {
    name: 'gateway web GET /api/tasks: no subscription key → 401',
    surface: 'gatewayWeb',
    method: 'get',
    path: '/api/tasks',
    needs: ['gatewayUrl'],
    before: 'advanceClock',
    request: (t) => ({ url: `${t.gatewayUrl}/web/api/tasks` }),
    status: 401,
    body: apimError(401, MISSING_KEY),
  },
  {
    name: 'gateway web GET /api/tasks: wrong subscription key → 401',
    surface: 'gatewayWeb',
    method: 'get',
    path: '/api/tasks',
    needs: ['gatewayUrl'],
    request: (t) => ({
      url: `${t.gatewayUrl}/web/api/tasks`,
      init: { headers: gatewayHeaders(t, WRONG_KEY) },
    }),
    status: 401,
    body: apimError(401, INVALID_KEY),
  },
  {
    name: 'gateway web POST /api/tasks: another content type → 415',
    surface: 'gatewayWeb',
    method: 'post',
    path: '/api/tasks',
    needs: GATEWAY,
    request: (t) => ({
      url: `${t.gatewayUrl}/web/api/tasks`,
      init: post('title=x', { ...gatewayHeaders(t), 'content-type': 'text/plain' }),
    }),
    status: 415,
    body: 'Content-Type must be application/json.',
  },
  {
    name: 'gateway web POST /api/tasks: title missing → 400',
    surface: 'gatewayWeb',
    method: 'post',
    path: '/api/tasks',
    needs: GATEWAY,
    request: (t) => ({ url: `${t.gatewayUrl}/web/api/tasks`, init: post('{"title":""}', gatewayHeaders(t)) }),
    status: 400,
    body: 'Title is required.',
  },
  {
    name: 'gateway web POST /api/tasks: a task → 200',
    surface: 'gatewayWeb',
    method: 'post',
    path: '/api/tasks',
    needs: GATEWAY,
    request: (t) => ({
      url: `${t.gatewayUrl}/web/api/tasks`,
      init: post(JSON.stringify({ title: 'contract web gateway' }), gatewayHeaders(t)),
    }),
    status: 200,
    check: (body) => expectEqual('title', JSON.parse(body).title, 'contract web gateway'),
  },
  {
    name: 'gateway web GET /api/tasks → 200',
    surface: 'gatewayWeb',
    method: 'get',
    path: '/api/tasks',
    needs: GATEWAY,
    request: (t) => ({ url: `${t.gatewayUrl}/web/api/tasks`, init: { headers: gatewayHeaders(t) } }),
    status: 200,
    check: (body) => {
      if (!JSON.parse(body).some((task: { title: string }) => task.title === 'contract web gateway'))
        throw new Error('the list lacks the task created through the gateway');
    },
  },
];

export const ROWS: Row[] = [...functionRows, ...webRows, ...gatewayRows];

const BROKEN_STORAGE =
  'needs a function app whose storage is broken; checked by system/functions/storage-failures.test.ts';

/**
 * The Errors-table rows no target can show (each needs a function app without StorageConnection or
 * with failing storage): a run names them with where they are checked, so none goes unmentioned.
 */
export const ELSEWHERE: { name: string; status: number; reason: string }[] = [
  'uploadattachment: StorageConnection missing or empty → 500 (empty)',
  'uploadattachment: any other failure → 500 "Error uploading file: …"',
  'getattachment: StorageConnection missing or empty → 500 (empty)',
  'getattachment: any other failure → 500 "Error retrieving file metadata: …"',
].map((name) => ({ name, status: 500, reason: BROKEN_STORAGE }));
