import { type StackDescription, stackFilePath } from './stackfile.ts';

/**
 * The ready banner: every address a developer needs, and where the keys are written down. No key is
 * printed: a console is often kept as a log (CI, `npm start > file`), and keys are never logged.
 */
export function banner(stack: StackDescription, startMs: number): string {
  // stack.json names the provider's address in any case (authUrl): shown only when it runs.
  const identity = stack.endpoints.identity !== undefined;
  const rows: [string, string | undefined][] = [
    ['Functions (baseUrl)', stack.baseUrl],
    ['Web app A (webBaseUrl)', stack.webBaseUrl],
    ...Object.entries(stack.apps ?? {})
      .filter(([name]) => name !== 'web' && !stack.baseUrl?.startsWith(stack.apps[name]?.url ?? '-'))
      .map(([name, app]): [string, string] => [`App ${name}`, app.url]),
    ['Gateway (gatewayUrl)', stack.gatewayUrl],
    ['Developer portal', stack.portalUrl],
    ['Identity (authUrl)', identity ? stack.authUrl : undefined],
    ['Blob storage', stack.endpoints.blob?.blob],
    ['Cosmos DB', stack.endpoints.cosmos?.cosmos],
    ['Key Vault', stack.endpoints.keyvault?.vault],
    ['Event Hubs', stack.endpoints.eventhubs?.amqp],
    ...Object.entries(stack.endpoints.eventgrid ?? {}).map(([topic, url]): [string, string] => [
      `Event Grid ${topic}`,
      url,
    ]),
    ['Control API', stack.controlUrl],
    ...(identity ? (stack.testUsers ?? []) : []).map((user): [string, string] => [
      'test user',
      `${user.userPrincipalName} (password in stack.json)`,
    ]),
    ['keys', 'in stack.json (functionKey, masterKey, subscriptionKey)'],
    ['stack.json', stackFilePath(stack.dataDir)],
  ];
  const shown = rows.filter((row): row is [string, string] => row[1] !== undefined);
  const width = Math.max(...shown.map(([label]) => label.length));
  const lines = shown.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`);
  return [
    '',
    `taskstack is ready (${Math.round(startMs)} ms)${stack.inMemory ? ' — in memory: nothing is persisted' : ''}`,
    ...lines,
    '  Ctrl-C stops everything.',
    '',
  ].join('\n');
}
