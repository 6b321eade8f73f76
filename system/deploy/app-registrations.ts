/**
 * The app registrations ARM cannot create (they are Microsoft Graph objects), as a bash script of `az ad
 * app` commands generated from the topology's `directory.applications` — the same registrations the local
 * identity provider serves. Redirect URIs are paths on addresses known only once deployed (`web.on`): those on
 * an app of apps.json are set by `taskstack deploy` (it knows the site's address); any other (the developer
 * portal) the script takes as `--url NAME=https://…`.
 */
import type { Apps } from '../../emulators/core/apps.ts';
import type { Topology } from '../../emulators/core/topology.ts';
import { directoryParameter, parameterVariable } from './arm.ts';

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

export function appRegistrationsScript(topology: Topology, apps: Apps): string {
  const applications = Object.entries(topology.directory.applications);
  // On an app of apps.json: `taskstack deploy` sets the redirect URIs once the site's address exists.
  const byDeploy = (on: string) => Boolean(apps[on]);
  const addresses = [
    ...new Set(applications.flatMap(([, app]) => (app.web && !byDeploy(app.web.on) ? [app.web.on] : []))),
  ];
  const usage = addresses.map((on) => `--url ${on}=https://…`).join(' ');
  const help = [
    `usage: system/deploy/azure/app-registrations.sh ${usage}${usage && ' '}[--out FILE]`,
    'Creates the app registrations of the Task Management Service (az ad app), once per tenant, after az login.',
    ...(addresses.length
      ? [`  --url NAME=URL  the address NAME's redirect URIs are on (needed: ${addresses.join(', ')})`]
      : []),
    '  --out FILE      where client ids and secrets go, mode 0600 (default .taskstack/app-registrations.env)',
    '  -h, --help      print this and exit',
  ];
  const lines = [
    '#!/usr/bin/env bash',
    '# Generated from system/topology.json (directory.applications) by system/deploy/generate.ts: do not edit.',
    '# The app registrations of the Task Management Service, which ARM cannot create. Run once per tenant,',
    '# after `az login` as someone allowed to register applications:',
    `#   system/deploy/azure/app-registrations.sh ${usage} [--out FILE]`,
    '# Client ids and secrets go to FILE (mode 0600, default .taskstack/app-registrations.env), never to the terminal.',
    'set -euo pipefail',
    'declare -A url=()',
    'out=.taskstack/app-registrations.env',
    "usage() { cat <<'USAGE'",
    ...help,
    'USAGE',
    '}',
    'while (($#)); do',
    '  case "$1" in',
    '    -h|--help) usage; exit 0 ;;',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's parameter expansion, not a template
    '    --url) url[${2%%=*}]=${2#*=}; shift 2 ;;',
    '    --out) out=$2; shift 2 ;;',
    '    *) echo "app-registrations.sh: unknown argument $1" >&2; exit 2 ;;',
    '  esac',
    'done',
    ...addresses.map(
      (on) =>
        `[[ -n "\${url[${on}]:-}" ]] || { echo "app-registrations.sh: give --url ${on}=https://… (its address)" >&2; exit 2; }`,
    ),
    'umask 077',
    'mkdir -p "$(dirname "$out")"',
    ': >"$out"',
    'new_uuid() { cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen; }',
  ];
  for (const [name, app] of applications) {
    // The names `taskstack deploy` reads the template's parameters from: the file can be sourced before deploying.
    const variable = (part: 'clientId' | 'clientSecret') => parameterVariable(directoryParameter(name, part));
    const web = app.web && !byDeploy(app.web.on) ? app.web : undefined;
    // Sign-out's return address too: Entra accepts only registered ones.
    const paths = new Set([...(web?.redirectPaths ?? []), ...(web?.postLogoutRedirectPaths ?? [])]);
    const redirects = [...paths].map((path) => `"\${url[${web?.on}]}${path}"`);
    lines.push(
      '',
      `# ${name}: ${app.displayName}${app.web && !web ? ` (redirect URIs on ${app.web.on}: set by taskstack deploy)` : ''}`,
      `id=$(az ad app create --display-name ${quote(app.displayName)} --sign-in-audience AzureADMyOrg${
        redirects.length ? ` --web-redirect-uris ${redirects.join(' ')}` : ''
      } --query appId --output tsv)`,
      `echo "${variable('clientId')}=$id" >>"$out"`,
    );
    if (app.identifierUris.length)
      lines.push(
        `az ad app update --id "$id" --identifier-uris ${app.identifierUris.map((uri) => `"${uri.replace('{clientId}', '$id')}"`).join(' ')}`,
      );
    if (app.scopes.length) {
      const scopes = app.scopes.map(
        (scope) =>
          `{\\"id\\":\\"$(new_uuid)\\",\\"value\\":\\"${scope}\\",\\"type\\":\\"User\\",\\"isEnabled\\":true,\\"adminConsentDisplayName\\":\\"${scope}\\",\\"adminConsentDescription\\":\\"${scope} on ${app.displayName}\\"}`,
      );
      // v2 access tokens, as the local provider issues (issuer …/v2.0): an API left at Entra's default gets
      // v1 tokens (issuer https://sts.windows.net/<tenant>/), which validate-entra-token's issuer refuses.
      lines.push(
        `az ad app update --id "$id" --set "api={\\"requestedAccessTokenVersion\\":2,\\"oauth2PermissionScopes\\":[${scopes.join(',')}]}"`,
      );
    }
    // Apps that sign users in on a server (web redirect URIs) are confidential clients: they get a secret.
    if (app.web)
      lines.push(
        `secret=$(az ad app credential reset --id "$id" --display-name taskstack --query password --output tsv)`,
        `echo "${variable('clientSecret')}=$secret" >>"$out"`,
      );
  }
  lines.push('', 'echo "app registrations written to $out"', '');
  return lines.join('\n');
}
