/**
 * The one check every HTTP answer a test sees goes through: the status is documented for that path and
 * method, the content type is one the document names (byte for byte: the texts are contract down to
 * the header), and the body fits the documented schema — whose enums hold the exact texts. Schemas are
 * checked by Ajv on the dereferenced documents, never by hand.
 */
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type { OpenAPIV3 } from 'openapi-types';

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

export const DOCUMENTS = {
  functions: 'functions.json',
  web: 'web.json',
  gatewayFunctions: 'gateway-functions.json',
  gatewayWeb: 'gateway-web.json',
} as const;
export type Surface = keyof typeof DOCUMENTS;

export const documentPath = (surface: Surface) =>
  fileURLToPath(new URL(`../openapi/${DOCUMENTS[surface]}`, import.meta.url));

/** A response with no body and no content type passes here only if the document allows it. */
export const EMPTY_ALLOWED = 'x-empty-body-allowed';

export interface Answer {
  status: number;
  contentType: string | null;
  body: string;
}

export type Method = 'get' | 'post';

// strict: false because OpenAPI schemas carry keywords JSON Schema does not know (example, nullable's
// companions, x- extensions); nullable itself Ajv implements.
const ajv = addFormats(new Ajv({ allErrors: true, strict: false }));
const compiled = new WeakMap<object, ValidateFunction>();
const loaded = new Map<Surface, Promise<OpenAPIV3.Document>>();

/** The surface's document with every $ref resolved (parsed once per process). */
export function loadDocument(surface: Surface): Promise<OpenAPIV3.Document> {
  let document = loaded.get(surface);
  if (!document) {
    document = SwaggerParser.dereference(documentPath(surface)) as Promise<OpenAPIV3.Document>;
    loaded.set(surface, document);
  }
  return document;
}

const schemaCheck = (schema: object) => {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
};

/** What is wrong with `answer` for `method path` of the surface's document; empty when it fits. */
export async function problemsWith(
  surface: Surface,
  method: Method,
  path: string,
  answer: Answer,
): Promise<string[]> {
  const document = await loadDocument(surface);
  const where = `${DOCUMENTS[surface]} ${method.toUpperCase()} ${path}`;
  const operation = document.paths[path]?.[method];
  if (!operation) return [`${where} is not documented`];
  const response = operation.responses[String(answer.status)] as
    | (OpenAPIV3.ResponseObject & { [EMPTY_ALLOWED]?: boolean })
    | undefined;
  if (!response) return [`${where}: status ${answer.status} is not documented`];
  const content = response.content ?? {};
  if (answer.body === '' && answer.contentType === null) {
    const allowed = Object.keys(content).length === 0 || response[EMPTY_ALLOWED] === true;
    return allowed ? [] : [`${where} ${answer.status}: an empty body is not documented`];
  }
  const media = answer.contentType === null ? undefined : content[answer.contentType];
  if (!media?.schema) {
    const documented = Object.keys(content).join(', ') || 'no content';
    return [
      `${where} ${answer.status}: content type ${answer.contentType ?? '(none)'} with a ${answer.body.length}-character body; documented: ${documented}`,
    ];
  }
  let value: unknown = answer.body;
  if (/json/.test(answer.contentType ?? '')) {
    try {
      value = JSON.parse(answer.body);
    } catch {
      return [`${where} ${answer.status}: the body is not JSON: ${answer.body.slice(0, 200)}`];
    }
  }
  const validate = schemaCheck(media.schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map(
    (error) =>
      `${where} ${answer.status}: body${error.instancePath} ${error.message} (${JSON.stringify(error.params)})`,
  );
}

// Response.text() drops a leading byte order mark and turns bytes that are not UTF-8 into U+FFFD: either
// would let a body that differs from the documented text in its bytes compare equal to it.
const utf8AsSent = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });

/** Reads a fetch Response into an Answer (the body is consumed), its text exactly as its bytes say. */
export async function answerOf(response: Response): Promise<Answer> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  let body: string;
  try {
    body = utf8AsSent.decode(bytes);
  } catch {
    throw new Error(`the ${response.status} answer's body (${bytes.length} bytes) is not UTF-8`);
  }
  return { status: response.status, contentType: response.headers.get('content-type'), body };
}

/** Throws, naming every problem, unless the answer is documented; returns it for further checks. */
export async function expectDocumented(
  surface: Surface,
  method: Method,
  path: string,
  response: Response | Answer,
): Promise<Answer> {
  const answer = response instanceof Response ? await answerOf(response) : response;
  const problems = await problemsWith(surface, method, path, answer);
  if (problems.length > 0) throw new Error(`undocumented answer:\n${problems.join('\n')}`);
  return answer;
}

/**
 * For a suite that only reads answers: checks `response` against the path its URL names (matched
 * without case, as the Functions host routes) under any method the document gives that path; the
 * answer passes when one of them documents it. Throws naming the problems; returns the answer.
 */
export async function documentedAnswer(surface: Surface, response: Response): Promise<Answer> {
  const answer = await answerOf(response);
  const document = await loadDocument(surface);
  const prefix = (document.servers?.[0]?.url ?? '/').replace(/\/$/, '');
  const requested = new URL(response.url).pathname.toLowerCase();
  const path = Object.keys(document.paths).find((name) => `${prefix}${name}`.toLowerCase() === requested);
  if (!path) throw new Error(`undocumented answer: ${DOCUMENTS[surface]} has no path ${requested}`);
  const methods = (['get', 'post'] as const).filter((method) => document.paths[path]?.[method]);
  const problems: string[] = [];
  for (const method of methods) {
    const found = await problemsWith(surface, method, path, answer);
    if (found.length === 0) return answer;
    problems.push(...found);
  }
  throw new Error(`undocumented answer:\n${problems.join('\n')}`);
}
