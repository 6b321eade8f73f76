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
  }),
  eventGrid: z.object({
    topics: z.array(
      z.object({
        name: z.string(),
        subscriptions: z.array(
          z.object({
            name: z.string(),
            endpointType: z.string(),
            function: z.string(),
            eventTypes: z.array(z.string()),
          }),
        ),
      }),
    ),
  }),
});
export type Topology = z.infer<typeof topologySchema>;

export const topologyPath = fileURLToPath(new URL('../../system/topology.json', import.meta.url));

export function loadTopology(path = topologyPath): Topology {
  return topologySchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}
