/**
 * Key Vault references in app settings, resolved as App Service and Azure Functions resolve them before
 * the app starts ("Use Key Vault references as app settings"): a value
 * `@Microsoft.KeyVault(SecretUri=https://<vault>.vault.azure.net/secrets/<name>[/<version>])` or
 * `@Microsoft.KeyVault(VaultName=<vault>;SecretName=<name>[;SecretVersion=<version>])` becomes the
 * secret's value, read with the app's managed identity (the IDENTITY_ENDPOINT/IDENTITY_HEADER the app
 * itself gets). A reference that cannot be resolved stays as it is (the app sees the reference text, as
 * in Azure) and a warning names the setting and the reason, never a value. Without a version the current
 * version is read. Resolved once, at start: Azure re-reads every 24 hours and on a configuration change,
 * which here is a restart of the app's component.
 *
 * Locally the stack's vaults are known by name (`vaults`: name → URI): `VaultName=<name>` and
 * `https://<name>.vault.azure.net/…` mean the vault of that name, and a SecretUri on a vault's own URI
 * means that vault. Any other vault is one the stack does not have: never called, the reference is
 * unresolvable.
 */
import { getJson, probe } from './http.ts';

const PREFIX = '@Microsoft.KeyVault(';

/** A reference, parsed: the vault (by name or by URI), the secret and its version if pinned. */
export interface KeyVaultReference {
  vaultName?: string;
  vaultUri?: string;
  secretName: string;
  version?: string;
}

/** True for a value App Service would treat as a Key Vault reference (resolved or not). */
export const isKeyVaultReference = (value: string) => value.startsWith(PREFIX) && value.endsWith(')');

/** A Key Vault reference to `secretName` in the vault named `vaultName` (App Service's VaultName form). */
export const keyVaultReference = (vaultName: string, secretName: string) =>
  `${PREFIX}VaultName=${vaultName};SecretName=${secretName})`;

const SECRET_NAME = /^[0-9a-zA-Z-]{1,127}$/;
const VERSION = /^[0-9a-zA-Z]{1,64}$/;

/** Parses a reference; a malformed one gives the reason (it is then unresolvable). */
export function parseKeyVaultReference(value: string): KeyVaultReference | { error: string } {
  if (!isKeyVaultReference(value)) return { error: 'not a Key Vault reference' };
  const body = value.slice(PREFIX.length, -1);
  const parts = new Map<string, string>();
  for (const part of body.split(';')) {
    if (!part.trim()) continue;
    const at = part.indexOf('=');
    if (at <= 0) return { error: `malformed part '${part.trim()}'` };
    parts.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  const secretUri = parts.get('secreturi');
  if (secretUri !== undefined) {
    let url: URL;
    try {
      url = new URL(secretUri);
    } catch {
      return { error: 'SecretUri is not a URL' };
    }
    const match = /^\/secrets\/([^/]+)(?:\/([^/]*))?\/?$/.exec(url.pathname);
    if (url.protocol !== 'https:' || !match)
      return { error: 'SecretUri is not https://<vault>/secrets/<name>[/<version>]' };
    const [, secretName = '', version] = match;
    const named = /^([0-9a-zA-Z-]+)\.vault\.azure\.net$/i.exec(url.hostname);
    return checked({
      ...(named ? { vaultName: named[1] } : { vaultUri: `${url.origin}/` }),
      secretName,
      version: version || undefined,
    });
  }
  const vaultName = parts.get('vaultname');
  const secretName = parts.get('secretname');
  if (!vaultName || !secretName) return { error: 'it needs SecretUri, or VaultName and SecretName' };
  return checked({ vaultName, secretName, version: parts.get('secretversion') || undefined });
}

function checked(reference: KeyVaultReference): KeyVaultReference | { error: string } {
  if (!SECRET_NAME.test(reference.secretName)) return { error: 'the secret name is not a valid one' };
  if (reference.version !== undefined && !VERSION.test(reference.version))
    return { error: 'the secret version is not a valid one' };
  return reference;
}

export interface ResolveOptions {
  /** The stack's vaults: name → URI (`https://127.0.0.1:P/`). */
  vaults: Record<string, string>;
  /** How long to wait for the vault and the identity endpoint to answer (they may still be starting). */
  waitMs?: number;
  /** One line per unresolvable reference: the setting and the reason, never a value. */
  warn: (message: string) => void;
}

/** The resource a Key Vault token is for (the vault's challenge names it). */
const VAULT_RESOURCE = 'https://vault.azure.net';

/** Waits until `url` answers HTTP at all (a component still starting refuses connections, or says 503). */
async function answering(url: string, deadline: number): Promise<boolean> {
  for (;;) {
    const status = await probe(url).catch(() => 0);
    if (status !== 0 && status !== 503) return true;
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 25));
  }
}

/**
 * The settings with every Key Vault reference replaced by its secret's value where it resolves. Reads
 * IDENTITY_ENDPOINT and IDENTITY_HEADER from `settings` (the app's own identity). One token, then one
 * GET per distinct secret, all at once.
 */
export async function resolveKeyVaultReferences(
  settings: Record<string, string>,
  options: ResolveOptions,
): Promise<Record<string, string>> {
  const references = Object.entries(settings).filter(([, value]) => isKeyVaultReference(value));
  if (references.length === 0) return settings;
  const resolved = { ...settings };
  const vaultsByName = new Map(
    Object.entries(options.vaults).map(([name, uri]) => [name.toLowerCase(), uri]),
  );
  const known = new Set(Object.values(options.vaults).map((uri) => new URL(uri).origin));
  const wanted = new Map<string, { vault: string; secretName: string; version?: string; names: string[] }>();
  for (const [name, value] of references) {
    const reference = parseKeyVaultReference(value);
    if ('error' in reference) {
      options.warn(`Key Vault reference in app setting ${name} was not resolved: ${reference.error}`);
      continue;
    }
    const vault = reference.vaultName
      ? vaultsByName.get(reference.vaultName.toLowerCase())
      : reference.vaultUri && known.has(new URL(reference.vaultUri).origin)
        ? reference.vaultUri
        : undefined;
    if (!vault) {
      const named = reference.vaultName ?? reference.vaultUri;
      options.warn(
        `Key Vault reference in app setting ${name} was not resolved: the vault ${named} is not one of this stack's (${[...vaultsByName.keys()].join(', ') || 'none'})`,
      );
      continue;
    }
    const key = `${vault}|${reference.secretName.toLowerCase()}|${reference.version ?? ''}`;
    const entry = wanted.get(key) ?? {
      vault,
      secretName: reference.secretName,
      version: reference.version,
      names: [],
    };
    entry.names.push(name);
    wanted.set(key, entry);
  }
  if (wanted.size === 0) return resolved;

  const identityEndpoint = settings.IDENTITY_ENDPOINT;
  if (!identityEndpoint || !settings.IDENTITY_HEADER) {
    for (const { names } of wanted.values())
      for (const name of names)
        options.warn(
          `Key Vault reference in app setting ${name} was not resolved: the app has no managed identity`,
        );
    return resolved;
  }
  const deadline = Date.now() + (options.waitMs ?? 30_000);
  const vaults = [...new Set([...wanted.values()].map((entry) => entry.vault))];
  const up = await Promise.all([
    answering(identityEndpoint, deadline),
    ...vaults.map((vault) => answering(`${vault}secrets?api-version=7.4`, deadline)),
  ]);
  const failAll = (reason: string) => {
    for (const { names } of wanted.values())
      for (const name of names)
        options.warn(`Key Vault reference in app setting ${name} was not resolved: ${reason}`);
  };
  if (!up.every(Boolean)) {
    failAll('the vault or the identity endpoint did not answer in time');
    return resolved;
  }
  // The platform's own calls, as App Service makes them (not an app's SDK, which the app loads itself):
  // one token for Key Vault from the app's identity endpoint, then one GET per distinct secret.
  const token = await getJson(
    `${identityEndpoint}?api-version=2019-08-01&resource=${encodeURIComponent(VAULT_RESOURCE)}`,
    { 'X-IDENTITY-HEADER': settings.IDENTITY_HEADER },
  ).catch((error: Error) => ({ status: 0, body: error.message }));
  const accessToken = (token.body as { access_token?: unknown } | undefined)?.access_token;
  if (token.status !== 200 || typeof accessToken !== 'string') {
    failAll(`the identity endpoint answered ${token.status || String(token.body)} for a Key Vault token`);
    return resolved;
  }
  await Promise.all(
    [...wanted.values()].map(async ({ vault, secretName, version, names }) => {
      const path = `secrets/${encodeURIComponent(secretName)}${version ? `/${encodeURIComponent(version)}` : ''}`;
      const answer = await getJson(`${vault}${path}?api-version=7.4`, {
        authorization: `Bearer ${accessToken}`,
      }).catch((error: Error) => ({ status: 0, body: error.message }));
      const { value, error } = (answer.body ?? {}) as { value?: unknown; error?: { code?: string } };
      if (answer.status === 200 && typeof value === 'string') {
        for (const name of names) resolved[name] = value;
        return;
      }
      const reason =
        answer.status === 0
          ? `the secret ${secretName} could not be read (${String(answer.body)})`
          : `the vault answered ${answer.status}${error?.code ? ` ${error.code}` : ''} for the secret ${secretName}${version ? ` version ${version}` : ''}`;
      for (const name of names)
        options.warn(`Key Vault reference in app setting ${name} was not resolved: ${reason}`);
    }),
  );
  return resolved;
}
