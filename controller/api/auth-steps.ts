// AuthConfig step kinds besides oauth2 (schemas.ts): basicAuth, ldap, opaAuth, opaServerAuth,
// passThroughAuth, hmacAuth, and the apiKeyAuth storage forms, with Gloo's field names (the camelCase
// JSON of enterprise.gloo.solo.io's extauth.proto). Which combinations make sense (one of apr or
// encryption+userList, one of grpc or http, …) is checked in translation, so the reason names the field.
import { z } from 'zod';
import { Duration, Name, ResourceRefSchema, notSupported } from './primitives.js';

const SaltedUsers = z.record(z.string(), z.strictObject({ salt: z.string(), hashedPassword: z.string() }));

/** `basicAuth`: the legacy `apr.users`, or Gloo 1.16's `encryption` (apr | sha1) with a `userList`. */
export const BasicAuthSchema = z.strictObject({
  realm: z.string().optional(),
  apr: z.strictObject({ users: SaltedUsers.optional() }).optional(),
  encryption: z.strictObject({ apr: z.strictObject({}).optional(), sha1: z.strictObject({}).optional() }).optional(),
  userList: z.strictObject({ users: SaltedUsers.optional() }).optional(),
});

/** `ldap`: bind as the user of the Basic credentials, then check its group membership. */
export const LdapSchema = z.strictObject({
  address: Name,
  userDnTemplate: z.string(),
  membershipAttributeName: z.string().optional(),
  allowedGroups: z.array(z.string()).optional(),
  pool: z
    .strictObject({
      maxSize: z.number().int().min(1, 'must be at least 1').optional(),
      initialSize: z.number().int().min(0).optional(),
    })
    .optional(),
  searchFilter: z.string().optional(),
  disableGroupChecking: z.boolean().optional(),
  groupLookupSettings: z
    .strictObject({ credentialsSecretRef: ResourceRefSchema.optional(), checkGroupsWithServiceAccount: z.boolean().optional() })
    .optional(),
});

const OpaAuthOptionsSchema = z.strictObject({
  fastInputConversion: z.boolean().optional(),
  returnDecisionReason: notSupported(
    "the decision reason is not put in dynamic metadata (deprecated in Gloo, which points to the policy's own dynamic_metadata)",
  ),
});

/** `opaAuth`: Rego modules from ConfigMaps and a query, evaluated inside extauth. */
export const OpaAuthSchema = z.strictObject({
  modules: z.array(ResourceRefSchema).optional(),
  query: z.string(),
  options: OpaAuthOptionsSchema.optional(),
});

/** `opaServerAuth`: a decision asked of an OPA server's data API. */
export const OpaServerAuthSchema = z.strictObject({
  package: z.string(),
  ruleName: z.string().optional(),
  serverAddr: z.string().optional(),
  options: OpaAuthOptionsSchema.optional(),
});

/** `passThroughAuth`: ask the user's own auth server, over gRPC (Envoy's ext_authz) or HTTP. */
export const PassThroughAuthSchema = z.strictObject({
  grpc: z
    .strictObject({
      address: Name,
      connectionTimeout: Duration.optional(),
      // Gloo's PassThroughGrpcTLSConfig has no fields: present means TLS
      tlsConfig: z.strictObject({}).optional(),
      retryPolicy: z
        .strictObject({
          retryBackOff: z.strictObject({ baseInterval: Duration, maxInterval: Duration.optional() }).optional(),
          numRetries: z.number().int().min(0).optional(),
        })
        .optional(),
    })
    .optional(),
  http: z
    .strictObject({
      url: Name,
      request: z
        .strictObject({
          allowedHeaders: z.array(z.string().min(1)).optional(),
          headersToAdd: z.record(z.string(), z.string()).optional(),
          passThroughState: z.boolean().optional(),
          passThroughFilterMetadata: z.boolean().optional(),
          passThroughBody: z.boolean().optional(),
        })
        .optional(),
      response: z
        .strictObject({
          allowedUpstreamHeaders: z.array(z.string().min(1)).optional(),
          allowedClientHeadersOnDenied: z.array(z.string().min(1)).optional(),
          readStateFromResponse: z.boolean().optional(),
          allowedUpstreamHeadersToOverwrite: z.array(z.string().min(1)).optional(),
        })
        .optional(),
      connectionTimeout: Duration.optional(),
    })
    .optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  failureModeAllow: z.boolean().optional(),
});

/** `hmacAuth`: credentials in Secrets, the signature's parameters in the request headers. */
export const HmacAuthSchema = z.strictObject({
  secretRefs: z.strictObject({ secretRefs: z.array(ResourceRefSchema).optional() }).optional(),
  parametersInHeaders: z.strictObject({}).optional(),
});

const MetadataEntry = z.strictObject({ name: Name, required: z.boolean().optional() });

/** `apiKeyAuth`: keys in Secrets (Gloo 1.17's k8sSecretApikeyStorage, or the deprecated top-level form). */
export const ApiKeyAuthSchema = z.strictObject({
  labelSelector: z.record(z.string(), z.string()).optional(),
  apiKeySecretRefs: z.array(ResourceRefSchema).optional(),
  headerName: z.string().min(1).optional(),
  headersFromMetadata: z.record(z.string(), MetadataEntry).optional(),
  headersFromMetadataEntry: z.record(z.string(), MetadataEntry).optional(),
  k8sSecretApikeyStorage: z
    .strictObject({ labelSelector: z.record(z.string(), z.string()).optional(), apiKeySecretRefs: z.array(ResourceRefSchema).optional() })
    .optional(),
  aerospikeApikeyStorage: notSupported('Legate reads API keys from Kubernetes Secrets only (k8sSecretApikeyStorage)'),
});
