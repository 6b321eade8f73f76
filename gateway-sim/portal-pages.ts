/** The developer portal's HTML: no script, every value escaped. */
import type { Api, Operation } from './artifacts.ts';

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

/** HTML from a template whose interpolated values are escaped, unless already `Html`. */
class Html {
  constructor(readonly text: string) {}
}
const html = (strings: TemplateStringsArray, ...values: (string | number | Html | Html[])[]) =>
  new Html(
    strings.reduce((out, part, i) => {
      const value = values[i - 1];
      const text = Array.isArray(value)
        ? value.map((v) => v.text).join('')
        : value instanceof Html
          ? value.text
          : escapeHtml(String(value));
      return out + text + part;
    }),
  );

const layout = (title: string, body: Html) =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:60em}code,pre{background:#f4f4f4;padding:2px 4px}
pre{white-space:pre-wrap;padding:1em}section{border-top:1px solid #ccc;margin-top:1em}</style></head>
<body><header><a href="./">Developer portal</a></header><main>${body}</main></body></html>`.text;

export interface PortalUser {
  name: string;
  userName: string;
  primaryKey: string;
  secondaryKey: string;
  subscriptionName: string;
  csrf: string;
}

const hasBody = (method: string) => method === 'POST' || method === 'PUT' || method === 'PATCH';
const pretty = (value: unknown) => JSON.stringify(value, null, 2);

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}

/** A value of the schema's shape, as APIM's portal fills Try it's body when the document has no example. */
function sampleOf(schema: Schema | undefined): unknown {
  if (schema?.properties)
    return Object.fromEntries(Object.entries(schema.properties).map(([name, sub]) => [name, sampleOf(sub)]));
  const samples: Record<string, unknown> = { string: 'string', integer: 0, number: 0, boolean: true };
  if (schema?.type === 'array') return [sampleOf(schema.items)];
  return samples[schema?.type ?? ''] ?? null;
}

/** The JSON media type of the request body, if any: Try it sends JSON. */
const jsonBody = (op: Operation) =>
  Object.entries(op.requestBody?.content ?? {}).find(([type]) => /[/+]json\b/.test(type))?.[1];

/** The request body and the documented answers, as APIM's portal shows an operation. */
function operationDocs(op: Operation) {
  const body = Object.entries(op.requestBody?.content ?? {}).map(([type, media]) => {
    const schema = media.schema as Schema | undefined;
    const rows = Object.entries(schema?.properties ?? {}).map(
      ([name, sub]) =>
        html`<tr><td><code>${name}</code></td><td>${sub.type ?? ''}</td><td>${schema?.required?.includes(name) ? 'yes' : 'no'}</td></tr>`,
    );
    return html`<h4>Request body</h4><p><code>${type}</code>, ${op.requestBody?.required ? 'required' : 'optional'}</p>
${rows.length ? html`<table><thead><tr><th scope="col">Property</th><th scope="col">Type</th><th scope="col">Required</th></tr></thead><tbody>${rows}</tbody></table>` : ''}
${media.example !== undefined ? html`<p>Example</p><pre>${pretty(media.example)}</pre>` : ''}`;
  });
  const answers = op.responses.map(
    (response) => html`<dt>${response.status}</dt><dd>${response.description}
${response.headers.length ? html`<p>Headers: ${response.headers.join(', ')}</p>` : ''}
${Object.entries(op.examples[response.status] ?? {}).map(([type, example]) =>
  example === undefined ? html`` : html`<p><code>${type}</code></p><pre>${pretty(example)}</pre>`,
)}</dd>`,
  );
  return html`${body}${answers.length ? html`<h4>Responses</h4><dl>${answers}</dl>` : ''}`;
}

/**
 * The APIs and their operations; for a signed-in user, the keys and a Try it form per operation. Each
 * form's controls are named after the operation (the visible word kept first, WCAG 2.5.3), so a screen
 * reader's list of controls tells them apart.
 */
export function indexPage(apis: Api[], gatewayUrl: string, user: PortalUser | undefined) {
  const account = user
    ? html`<p id="user">Signed in as <strong>${user.name}</strong> (${user.userName})</p>
<form method="post" action="signout"><input type="hidden" name="_csrf" value="${user.csrf}">
<button id="sign-out" type="submit">Sign out</button></form>
<h2>Your subscription</h2><p>${user.subscriptionName}</p>
<dl>${(['primary', 'secondary'] as const).map(
        // Masked until asked for, as APIM's portal shows keys: out of screenshots and shoulder views.
        (slot) => html`<dt>${slot === 'primary' ? 'Primary' : 'Secondary'} key</dt>
<dd><details><summary>Show ${slot} key</summary><code id="${slot}-key">${user[`${slot}Key`]}</code></details></dd>`,
      )}</dl>`
    : html`<p><a id="sign-in" href="signin">Sign in</a> to see your subscription key and try the APIs.</p>`;
  const sections = apis.map(
    (api) => html`<section class="api" id="api-${api.name}"><h2>${api.displayName}</h2>
<p>Base URL <code>${gatewayUrl}/${api.path}</code>; subscription key header <code>${api.keyHeader}</code>
or query parameter <code>${api.keyQuery}</code>${api.authorizationServer ? html`; OAuth 2.0 server <code>${api.authorizationServer}</code>` : ''}.</p>
${api.operations.map(
  (op) => html`<div class="operation" id="op-${api.name}-${op.name}"><h3>${op.displayName}</h3>
<p><code>${op.method} /${api.path}${op.urlTemplate}</code></p><p>${op.description}</p>
${user ? tryForm(api, op, user.csrf) : ''}
${operationDocs(op)}</div>`,
)}</section>`,
  );
  return layout('Developer portal', html`<h1>APIs</h1>${account}${sections}`);
}

export type KeySlot = 'primary' | 'secondary';

/**
 * An operation's Try it form: the body (the example, else a sample of the schema, unless `filled`) and
 * the key to send.
 */
function tryForm(
  api: Api,
  op: Operation,
  csrf: string,
  filled?: { body: string | undefined; slot: KeySlot },
) {
  const body =
    filled?.body ??
    pretty(jsonBody(op)?.example ?? sampleOf(jsonBody(op)?.schema as Schema | undefined) ?? {});
  const option = (slot: KeySlot, text: string) =>
    slot === (filled?.slot ?? 'primary')
      ? html`<option value="${slot}" selected>${text}</option>`
      : html`<option value="${slot}">${text}</option>`;
  return html`<form method="post" action="try"><input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="operation" value="${api.name}/${op.name}">
${hasBody(op.method) ? html`<label>Body<br><textarea name="body" rows="6" cols="60" aria-label="Body of ${op.displayName}">${body}</textarea></label><br>` : ''}
<label>Subscription key <select name="key" aria-label="Subscription key for ${op.displayName}">${option('primary', 'Primary key')}${option('secondary', 'Secondary key')}</select></label><br>
<button type="submit" aria-label="Try it: ${op.displayName}">Try it</button></form>`;
}

export interface TryResult {
  api: Api;
  operation: Operation;
  csrf: string;
  slot: KeySlot;
  url: string;
  /** The headers sent, secrets already masked. */
  requestHeaders: [string, string][];
  requestBody: string | undefined;
  status: number;
  statusText: string;
  headers: [string, string][];
  body: string;
}

const headerLines = (headers: [string, string][]) =>
  headers.map(([name, value]) => `${name}: ${value}`).join('\n');

/** What Try it sent and what came back: status, headers and body, as APIM's portal shows them. */
export function resultPage(result: TryResult) {
  const { api, operation, csrf, slot, requestBody } = result;
  const sent = [`${operation.method} ${result.url}`, headerLines(result.requestHeaders)];
  if (requestBody !== undefined) sent.push(`\n${requestBody}`);
  return layout(
    `Try it: ${operation.displayName}, ${result.status} ${result.statusText}`,
    html`<h1>Try it: ${operation.displayName}</h1><h2>Request</h2>
<pre id="request">${sent.join('\n')}</pre>
<h2>Response</h2><p>Status <strong id="status">${result.status}</strong> ${result.statusText}</p>
<pre id="response-headers">${headerLines(result.headers)}</pre>
<pre id="response">${result.body}</pre>
<h2>Try again</h2>${tryForm(api, operation, csrf, { body: requestBody, slot })}<p><a href="./">Back to the APIs</a></p>`,
  );
}

/** A one-line answer, with the way on (back to the APIs unless said). */
export const messagePage = (title: string, message: string, next = html`<a href="./">Back to the APIs</a>`) =>
  layout(title, html`<h1>${title}</h1><p role="alert">${message}</p><p>${next}</p>`);

/** A refusal for want of a session, with the way on: sign in. */
export const signInPage = (message: string) =>
  messagePage('Sign in', message, html`<a id="sign-in" href="signin">Sign in</a>`);
