/**
 * The directory the sign-in provider serves: the topology's app registrations and test users joined with
 * their generated half (client ids, secrets, object ids, passwords from keys.json) and the redirect URIs
 * the launcher resolved.
 */
import { sameKey } from '../core/compare.ts';
import type { SharedSecrets } from '../core/secrets.ts';
import type { Topology } from '../core/topology.ts';

export interface Application {
  name: string;
  displayName: string;
  clientId: string;
  clientSecret: string;
  principalId: string;
  /** `api://<clientId>` when the app exposes an API. */
  identifierUri: string | undefined;
  /** Delegated scopes the API exposes (`user_impersonation`). */
  scopes: string[];
  /**
   * Entra's one list: where sign-ins return and where sign-outs may ("must match one of the redirect
   * URIs registered for your application"); the topology's post-logout URIs are among them, as
   * system/deploy registers them.
   */
  redirectUris: string[];
}

/** Where the provider's pages may send a person for this app: its redirect URIs' origins (for the CSP). */
export const redirectOrigins = (app: Application | undefined) =>
  (app?.redirectUris ?? []).map((uri) => new URL(uri).origin);

export interface User {
  name: string;
  objectId: string;
  password: string;
  displayName: string;
  mail: string | undefined;
  userPrincipalName: string;
}

/** Redirect URIs by application name, absolute; an application not named accepts none. */
export interface ResolvedUris {
  redirectUris: Record<string, string[]>;
  postLogoutRedirectUris: Record<string, string[]>;
}

export interface Directory {
  applications: Application[];
  users: User[];
  application(clientId: string): Application | undefined;
  /** Entra's sign-in names are case-insensitive. */
  userByName(userPrincipalName: string): User | undefined;
  userById(objectId: string): User | undefined;
  /** Compares in constant time, so the answer's timing does not tell how much of the password was right. */
  checkPassword(user: User, given: string): boolean;
}

export function loadDirectory(topology: Topology, secrets: SharedSecrets, uris: ResolvedUris): Directory {
  const declared = topology.directory;
  for (const [kind, given] of Object.entries(uris)) {
    for (const name of Object.keys(given))
      if (!declared.applications[name])
        throw new Error(`${kind} names ${name}, which is not an application of the topology's directory`);
  }
  const applications = Object.entries(declared.applications).map(([name, app]): Application => {
    const generated = secrets.directory.applications[name];
    if (!generated) throw new Error(`keys.json has no credentials for application ${name}`);
    return {
      name,
      displayName: app.displayName,
      ...generated,
      identifierUri: app.identifierUris[0]?.replace('{clientId}', generated.clientId),
      scopes: app.scopes,
      redirectUris: [
        ...new Set([...(uris.redirectUris[name] ?? []), ...(uris.postLogoutRedirectUris[name] ?? [])]),
      ],
    };
  });
  const users = Object.entries(declared.users).map(([name, user]): User => {
    const generated = secrets.directory.users[name];
    if (!generated) throw new Error(`keys.json has no password for user ${name}`);
    return { name, ...generated, ...user, mail: user.mail };
  });
  return {
    applications,
    users,
    application: (clientId) => applications.find((app) => app.clientId === clientId),
    userByName: (upn) =>
      users.find((user) => user.userPrincipalName.toLowerCase() === upn.trim().toLowerCase()),
    userById: (objectId) => users.find((user) => user.objectId === objectId),
    checkPassword: (user, given) => sameKey(given, user.password),
  };
}

/** What stack.json lists about the test users: how a person signs in as them. */
export function testUsers(directory: Directory) {
  return directory.users.map(({ userPrincipalName, password, displayName, mail, objectId }) => ({
    userPrincipalName,
    password,
    displayName,
    ...(mail && { mail }),
    id: objectId,
  }));
}
