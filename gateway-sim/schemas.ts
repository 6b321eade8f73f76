/**
 * The shapes of the artifact files: APIM's ARM resource properties, as far as the gateway reads them
 * (other ARM properties are allowed and left to the deployment), and the parts of OpenAPI 3 that define
 * operations. A file that does not fit is refused naming the property.
 */
import { z } from 'zod';

/** A subscription's states, as APIM names them. */
export const STATES = ['active', 'suspended', 'cancelled', 'expired', 'rejected', 'submitted'] as const;
export type SubscriptionState = (typeof STATES)[number];

const name = z.string().regex(/^[A-Za-z0-9][\w.-]*$/, 'letters, digits, ".", "_" or "-"');

export const apiFile = z.object({
  name,
  properties: z.object({
    displayName: z.string().min(1),
    path: z.string(),
    serviceUrl: z.string().min(1),
    subscriptionRequired: z.boolean().default(true),
    subscriptionKeyParameterNames: z
      .object({ header: z.string().min(1), query: z.string().min(1) })
      .default({ header: 'Ocp-Apim-Subscription-Key', query: 'subscription-key' }),
    authenticationSettings: z
      .object({ oAuth2: z.object({ authorizationServerId: z.string().min(1) }).optional() })
      .optional(),
    format: z.literal('openapi+json-link', {
      message: 'must be openapi+json-link (value: the OpenAPI document, relative to this file)',
    }),
    value: z.string().min(1),
  }),
});

export const namedValuesFile = z.object({
  namedValues: z.array(
    z.object({
      name,
      properties: z.object({ secret: z.boolean().default(false), value: z.string().optional() }),
    }),
  ),
});

export const productsFile = z.object({
  products: z.array(
    z.object({
      name,
      properties: z.object({
        displayName: z.string().min(1),
        // false: an open product, whose APIs take calls without a key (APIM's default is true).
        subscriptionRequired: z.boolean().default(true),
      }),
      apis: z.array(name),
    }),
  ),
});

export const subscriptionsFile = z.object({
  subscriptions: z.array(
    z.object({
      name,
      properties: z.object({
        displayName: z.string().min(1).optional(),
        scope: z
          .string()
          .regex(/^\/(apis|products)(\/[^/]+)?$/, 'must be /apis, /apis/<api> or /products/<product>'),
        state: z.enum(STATES).default('active'),
      }),
    }),
  ),
});

export const authorizationServerFile = z.object({
  name,
  properties: z.looseObject({
    displayName: z.string().min(1),
    authorizationEndpoint: z.string().min(1),
    tokenEndpoint: z.string().min(1),
    clientId: z.string().min(1),
    clientSecret: z.string().optional(),
    defaultScope: z.string().optional(),
    grantTypes: z.array(z.string()).min(1),
  }),
});

/** A media type of a request or an answer: its schema (shown by the portal) and example. */
const media = z.record(
  z.string(),
  z.object({ schema: z.unknown().optional(), example: z.unknown().optional() }),
);
const operation = z.object({
  operationId: z.string().min(1),
  summary: z.string().optional(),
  description: z.string().optional(),
  requestBody: z.object({ required: z.boolean().optional(), content: media.optional() }).optional(),
  responses: z
    .record(
      z.string(),
      z.object({
        description: z.string().optional(),
        headers: z.record(z.string(), z.unknown()).optional(),
        content: media.optional(),
      }),
    )
    .default({}),
});
export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export const openApiDocument = z.object({
  openapi: z.string().regex(/^3\./, 'must be an OpenAPI 3 document'),
  components: z.object({ schemas: z.record(z.string(), z.unknown()).optional() }).optional(),
  paths: z.record(
    z.string().startsWith('/'),
    z.object(Object.fromEntries(METHODS.map((m) => [m, operation.optional()]))),
  ),
});
