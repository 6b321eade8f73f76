import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** Schema of `system/topology.json`: the Azure resources the spec names, in the shape ARM uses where one exists. */
const identityName = z.string().min(1);

const lifecycleRule = z.object({
  enabled: z.boolean(),
  name: z.string(),
  type: z.literal('Lifecycle'),
  definition: z.object({
    actions: z.object({
      baseBlob: z.object({
        delete: z.object({ daysAfterModificationGreaterThan: z.number().nonnegative() }).optional(),
      }),
    }),
    filters: z.object({
      blobTypes: z.array(z.enum(['blockBlob', 'appendBlob'])),
      prefixMatch: z.array(z.string()).optional(),
    }),
  }),
});
export type LifecycleRule = z.infer<typeof lifecycleRule>;

/** The built-in Event Hubs data roles (Azure RBAC) an identity can be assigned on the namespace. */
export const eventHubsRoles = z.enum([
  'Azure Event Hubs Data Owner',
  'Azure Event Hubs Data Sender',
  'Azure Event Hubs Data Receiver',
]);

/**
 * The built-in role that lets an Entra identity publish to a topic (Azure RBAC, assigned on the topic):
 * `EventGridPublisherClient` with a TokenCredential needs it.
 */
export const eventGridRoles = z.enum(['EventGrid Data Sender']);

/** Event Grid's input and delivery schemas, by their ARM names. */
const eventSchema = z.enum(['EventGridSchema', 'CloudEventSchemaV1_0']);
const eventSubscription = {
  name: z.string(),
  eventTypes: z.array(z.string()),
  /** What the subscription delivers; the topic's input schema when absent (as Azure defaults it). */
  eventDeliverySchema: eventSchema.optional(),
};
const eventGridTopic = z
  .object({
    name: z.string(),
    inputSchema: eventSchema.default('EventGridSchema'),
    /** Who may publish with a Microsoft Entra token (the access key and SAS work regardless). */
    roleAssignments: z.array(z.object({ identity: identityName, role: eventGridRoles })).default([]),
    subscriptions: z.array(
      z.discriminatedUnion('endpointType', [
        z.object({ ...eventSubscription, endpointType: z.literal('AzureFunction'), function: z.string() }),
        z.object({ ...eventSubscription, endpointType: z.literal('WebHook'), endpointUrl: z.string().url() }),
      ]),
    ),
  })
  .superRefine((topic, check) => {
    // Azure's compatibility table: Event Grid schema may go out as CloudEvents, not the reverse.
    if (topic.inputSchema !== 'CloudEventSchemaV1_0') return;
    for (const subscription of topic.subscriptions)
      if (subscription.eventDeliverySchema === 'EventGridSchema')
        check.addIssue({
          code: 'custom',
          message: `subscription ${subscription.name}: a topic with input schema CloudEventSchemaV1_0 delivers only CloudEventSchemaV1_0 (Azure's schema compatibility)`,
        });
  });
export type EventGridTopic = z.infer<typeof eventGridTopic>;
export type EventSubscription = EventGridTopic['subscriptions'][number];

/**
 * An app registration of the directory (Entra ID). Its client id and secret are generated per data
 * directory; its redirect URIs are paths on an address only known at run time (`web.on`: an app of
 * apps.json or a stack component), which the launcher resolves.
 */
const directoryApplication = z.object({
  displayName: z.string().min(1),
  web: z
    .object({
      on: z.string().min(1),
      redirectPaths: z.array(z.string().startsWith('/')),
      postLogoutRedirectPaths: z.array(z.string().startsWith('/')).default([]),
    })
    .optional(),
  /** `api://{clientId}`: the application ID URI other apps ask tokens for. */
  identifierUris: z.array(z.literal('api://{clientId}')).default([]),
  /** Delegated permissions the API exposes (`oauth2PermissionScopes[].value` in Graph). */
  scopes: z.array(z.string().regex(/^[\w.]+$/)).default([]),
});
export type DirectoryApplication = z.infer<typeof directoryApplication>;

/** A test user of the directory; the password and object id are generated per data directory. */
const directoryUser = z.object({
  displayName: z.string().min(1),
  mail: z.string().email().optional(),
  userPrincipalName: z.string().regex(/^[^@\s]+@[^@\s]+$/),
});
export type DirectoryUser = z.infer<typeof directoryUser>;

export const topologySchema = z.object({
  identities: z.record(identityName, z.object({ type: z.literal('SystemAssigned'), app: z.string() })),
  storage: z.object({
    containers: z.array(z.string()),
    managementPolicy: z.object({ policy: z.object({ rules: z.array(lifecycleRule) }) }),
  }),
  cosmos: z.object({
    databases: z.array(
      z.object({
        id: z.string(),
        containers: z.array(z.object({ id: z.string(), partitionKeyPath: z.string() })),
      }),
    ),
    roleAssignments: z.array(z.object({ identity: identityName, role: z.string() })),
  }),
  keyVault: z.object({
    secrets: z.array(z.string()),
    accessPolicies: z.array(
      z.object({ identity: identityName, permissions: z.object({ secrets: z.array(z.string()) }) }),
    ),
  }),
  eventHubs: z.object({
    sku: z.string(),
    hubs: z.array(
      z.object({
        name: z.string(),
        partitionCount: z.number().int().positive(),
        messageRetentionInDays: z.number(),
      }),
    ),
    roleAssignments: z.array(z.object({ identity: identityName, role: eventHubsRoles })),
  }),
  eventGrid: z.object({ topics: z.array(eventGridTopic) }),
  directory: z.object({
    applications: z.record(z.string().min(1), directoryApplication),
    users: z.record(z.string().min(1), directoryUser),
  }),
});
export type Topology = z.infer<typeof topologySchema>;

export const topologyPath = fileURLToPath(new URL('../../system/topology.json', import.meta.url));

export function loadTopology(path = topologyPath): Topology {
  return topologySchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}
