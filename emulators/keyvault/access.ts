/** Key Vault access policies (the vault's permission model, not Azure RBAC): secret permissions per identity. */
import type { IdentitySecrets } from '../core/secrets.ts';
import type { Topology } from '../core/topology.ts';

export const SECRET_PERMISSIONS = [
  'get',
  'list',
  'set',
  'delete',
  'recover',
  'purge',
  'backup',
  'restore',
] as const;
export type SecretPermission = (typeof SECRET_PERMISSIONS)[number];

export class AccessPolicies {
  /** principalId → permissions. */
  #granted = new Map<string, Set<SecretPermission>>();

  constructor(
    topology: Topology,
    private readonly identities: Record<string, IdentitySecrets>,
  ) {
    for (const policy of topology.keyVault.accessPolicies)
      this.set(policy.identity, policy.permissions.secrets);
  }

  /** Replaces one identity's secret permissions, as `az keyvault set-policy --secret-permissions` does. */
  set(identity: string, secrets: string[]): void {
    const principalId = this.identities[identity]?.principalId;
    if (!principalId) throw new Error(`unknown identity ${identity}`);
    const permissions = new Set<SecretPermission>();
    for (const given of secrets) {
      const name = given.toLowerCase();
      // `all` is what the portal and the CLI accept for "every secret permission".
      if (name === 'all') for (const p of SECRET_PERMISSIONS) permissions.add(p);
      else if ((SECRET_PERMISSIONS as readonly string[]).includes(name))
        permissions.add(name as SecretPermission);
      else throw new Error(`unknown secret permission ${given}`);
    }
    this.#granted.set(principalId, permissions);
  }

  allows(principalId: string, permission: SecretPermission): boolean {
    return this.#granted.get(principalId)?.has(permission) ?? false;
  }
}
