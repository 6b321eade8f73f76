/**
 * `taskstack deploy --resource-group RG [--environment dev|prod] [--dry-run] [--packages DIR] [--target-file F]`:
 * the `az` commands that put the very same artifacts in Azure, in order — the template (resources and
 * settings), the redirect URIs of the registrations the apps sign users in with, each app's zip (`npm run package`), the template again (sites untouched) with the Event Grid subscriptions
 * (Azure checks their function exists), the function key — then a stack.json-shaped target file for
 * the contract table and the scenarios. `--dry-run` prints the commands and runs nothing.
 * Template parameters without a default come from the environment (EncryptionKey ← TASKSTACK_ENCRYPTION_KEY,
 * EntraClientId ← TASKSTACK_ENTRA_CLIENT_ID, …) and reach az in a parameters file (mode 0600, removed
 * afterwards), never on a command line: some are secrets.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { type Apps, loadApps, repositoryRoot } from '../../emulators/core/apps.ts';
import { writeFileAtomic } from '../../emulators/core/files.ts';
import { loadTopology, type Topology } from '../../emulators/core/topology.ts';
import { allApisSubscription } from './apim.ts';
import { directoryParameter, parameterVariable } from './arm.ts';
import { outDir, parametersFile, TEMPLATE } from './paths.ts';

export interface DeployOptions {
  resourceGroup: string;
  environment: string;
  dryRun: boolean;
  packages: string;
  targetFile: string;
  env: NodeJS.ProcessEnv;
  print: (line: string) => void;
}

type Outputs = Record<string, { value: string }>;

export class DeployError extends Error {}

const shown = (args: string[]) =>
  ['az', ...args]
    .map((arg) => (/^[\w@./:=<>,-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`))
    .join(' ');

export async function deploy(
  options: DeployOptions,
  apps: Apps = loadApps(),
  topology: Topology = loadTopology(),
) {
  const { resourceGroup: group, dryRun, print } = options;
  const template = JSON.parse(readFileSync(join(repositoryRoot, TEMPLATE), 'utf8'));
  const given = Object.entries(template.parameters as Record<string, { defaultValue?: unknown }>)
    .filter(([, parameter]) => parameter.defaultValue === undefined)
    .map(([name]) => name);
  /** What stops a run before any az command; a dry run says it and goes on, so that it shows everything. */
  const refuse = (message: string) => {
    if (!dryRun) throw new DeployError(message);
    print(`# a run would stop here: ${message}`);
  };
  const missing = given.filter((name) => !options.env[parameterVariable(name)]);
  if (missing.length)
    refuse(
      `set ${missing.map(parameterVariable).join(', ')} (the template's parameter${missing.length > 1 ? 's' : ''} ${missing.join(', ')}) before deploying`,
    );
  const zips = Object.fromEntries(
    Object.keys(apps).map((app) => [app, join(options.packages, `${app}.zip`)]),
  );
  const absent = Object.values(zips).filter((zip) => !existsSync(zip));
  if (absent.length)
    refuse(
      `${absent.map((zip) => relative(repositoryRoot, zip)).join(', ')} missing: run npm run package first`,
    );

  const scratch = dryRun ? undefined : mkdtempSync(join(tmpdir(), 'taskstack-deploy-'));
  const secureFile = scratch ? join(scratch, 'secure.parameters.json') : '<secure parameters file>';
  if (scratch)
    writeFileAtomic(
      secureFile,
      JSON.stringify({
        $schema: 'https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#',
        contentVersion: '1.0.0.0',
        parameters: Object.fromEntries(
          given.map((name) => [name, { value: options.env[parameterVariable(name)] }]),
        ),
      }),
    );

  /** Runs (or prints) one az command; its stdout when run. */
  const az = (args: string[]): string => {
    print(shown(args));
    if (dryRun) return '';
    const result = spawnSync('az', args, {
      cwd: repositoryRoot,
      encoding: 'utf8',
      env: options.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (result.error) throw new DeployError(`could not run az: ${result.error.message}`);
    if (result.status !== 0)
      throw new DeployError(`az ${args.slice(0, 3).join(' ')} failed (exit ${result.status})`);
    return result.stdout;
  };
  const deployment = (extra: string[]) =>
    az([
      'deployment',
      'group',
      'create',
      '--resource-group',
      group,
      '--name',
      'taskstack',
      '--template-file',
      TEMPLATE,
      '--parameters',
      `@${parametersFile(options.environment)}`,
      '--parameters',
      `@${secureFile}`,
      ...extra,
      '--query',
      'properties.outputs',
      '--output',
      'json',
    ]);

  try {
    const text = deployment([]);
    const outputs: Outputs = dryRun ? {} : JSON.parse(text);
    const output = (key: string) =>
      dryRun ? `<${key}>` : (outputs[key]?.value ?? fail(`the deployment has no output ${key}`));
    // A registration's redirect URIs are on its app's site, whose address exists only now (app-registrations.sh
    // cannot know it). Sign-out's return address too: Entra accepts only registered ones.
    for (const [registration, { web }] of Object.entries(topology.directory.applications)) {
      if (!web || !apps[web.on]) continue;
      const variable = parameterVariable(directoryParameter(registration, 'clientId'));
      const clientId = options.env[variable] || (dryRun ? `<${variable}>` : undefined);
      if (!clientId) {
        print(`# ${registration}: no ${variable}, its redirect URIs are left as they are`);
        continue;
      }
      const site = output(`${web.on}Url`);
      const uris = [...web.redirectPaths, ...web.postLogoutRedirectPaths].map((path) => `${site}${path}`);
      // Added to those it has: the registrations are once per tenant, and an update replaces the list, so
      // deploying one environment would otherwise take sign-in away from the others.
      const current = az([
        'ad',
        'app',
        'show',
        '--id',
        clientId,
        '--query',
        'web.redirectUris',
        '--output',
        'json',
      ]);
      const registered: string[] = current.trim() ? JSON.parse(current) : [];
      az([
        'ad',
        'app',
        'update',
        '--id',
        clientId,
        '--web-redirect-uris',
        ...new Set([...registered, ...uris]),
      ]);
    }
    for (const [app, declaration] of Object.entries(apps)) {
      const zip = relative(repositoryRoot, zips[app] as string);
      if (declaration.kind === 'functionapp')
        az([
          'functionapp',
          'deployment',
          'source',
          'config-zip',
          '--resource-group',
          group,
          '--name',
          output(`${app}Name`),
          '--src',
          zip,
        ]);
      else
        az([
          'webapp',
          'deploy',
          '--resource-group',
          group,
          '--name',
          output(`${app}Name`),
          '--src-path',
          zip,
          '--type',
          'zip',
        ]);
    }
    deployment(['--parameters', 'codeDeployed=true']);
    const functionsApp = Object.entries(apps).find(([, app]) => app.kind === 'functionapp')?.[0];
    const functionKey = functionsApp
      ? az([
          'functionapp',
          'keys',
          'list',
          '--resource-group',
          group,
          '--name',
          output(`${functionsApp}Name`),
          '--query',
          'functionKeys.default',
          '--output',
          'tsv',
        ]).trim()
      : undefined;
    const webApp = Object.entries(apps).find(([, app]) => app.kind === 'webapp')?.[0];
    const subscription = template.outputs.gatewayUrl && allApisSubscription();
    const subscriptionKey = subscription
      ? az([
          'rest',
          '--method',
          'post',
          '--url',
          `/subscriptions/{subscriptionId}/resourceGroups/${group}/providers/Microsoft.ApiManagement/service/${output('apimName')}/subscriptions/${subscription}/listSecrets?api-version=2023-05-01-preview`,
          '--query',
          'primaryKey',
          '--output',
          'tsv',
        ]).trim()
      : undefined;
    const target = {
      target: 'azure',
      resourceGroup: group,
      baseUrl: functionsApp && output(`${functionsApp}Url`),
      webBaseUrl: webApp && output(`${webApp}Url`),
      gatewayUrl: template.outputs.gatewayUrl && output('gatewayUrl'),
      authUrl: 'https://login.microsoftonline.com',
      functionKey,
      subscriptionKey,
      apps: Object.fromEntries(Object.keys(apps).map((app) => [app, { url: output(`${app}Url`) }])),
    };
    if (dryRun) print(`# then writes ${options.targetFile}: ${Object.keys(target).join(', ')}`);
    else {
      writeFileAtomic(options.targetFile, `${JSON.stringify(target, null, 2)}\n`);
      print(`wrote ${options.targetFile}`);
    }
    return target;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

function fail(message: string): never {
  throw new DeployError(message);
}

/** The CLI's `deploy` command (emulators/stack/cli.ts hands it its arguments). */
export async function deployCommand(argv: string[]): Promise<never> {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        'resource-group': { type: 'string' },
        environment: { type: 'string', default: 'dev' },
        'dry-run': { type: 'boolean', default: false },
        packages: { type: 'string', default: outDir },
        'target-file': { type: 'string' },
      },
    });
    const group =
      values['resource-group'] ??
      fail('usage: taskstack deploy --resource-group RG [--environment dev|prod] [--dry-run]');
    if (!existsSync(join(repositoryRoot, parametersFile(values.environment))))
      fail(
        `no parameters file for environment ${values.environment} (${parametersFile(values.environment)})`,
      );
    await deploy({
      resourceGroup: group,
      environment: values.environment,
      dryRun: values['dry-run'],
      packages: values.packages,
      targetFile: values['target-file'] ?? join(repositoryRoot, '.taskstack', `azure-${group}.json`),
      env: process.env,
      print: (line) => console.log(line),
    });
    process.exit(0);
  } catch (error) {
    console.error(`taskstack deploy: ${(error as Error).message}`);
    process.exit(1);
  }
}
