// CustomResourceDefinitions for every custom kind of the registry (kinds.ts), generated from the same
// zod schemas the controller validates with (zod -> JSON Schema -> Kubernetes' structural OpenAPI v3
// subset), with the status subresource, printer columns and short names. Pure.
import { z } from 'zod';
import { KIND_NAMES, KINDS, kindInfo, type KindName } from './kinds.js';

type Schema = Record<string, unknown>;

/** The `x-kubernetes-…` way of saying "any JSON here, kept as it is". */
const ANY: Schema = { 'x-kubernetes-preserve-unknown-fields': true };

/**
 * A JSON Schema as the API server accepts it in a CRD ("structural"): every node typed, no
 * `additionalProperties: false` (the server prunes unknown fields, and kubectl's strict field
 * validation refuses them), no unions; what zod cannot express becomes "any JSON" and is left to
 * the controller, which validates every resource with the full schema anyway.
 */
export function structural(schema: unknown): Schema {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return { ...ANY };
  const s = schema as Schema;
  if (Object.keys(s).length === 0) return { ...ANY };
  if ('anyOf' in s || 'oneOf' in s || 'allOf' in s || '$ref' in s || Array.isArray(s['type']) || s['type'] === undefined) {
    return { ...ANY, ...(typeof s['description'] === 'string' ? { description: s['description'] } : {}) };
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(s)) {
    // recursive schemas (RateLimitConfig descriptors) come as $defs + $ref: the $ref became any JSON above
    if (key === '$schema' || key === 'id' || key === '$id' || key === 'definitions' || key === '$defs') continue;
    // JSON Schema keywords the API server's OpenAPI v3 subset does not declare (z.base64() emits contentEncoding)
    if (key === 'contentEncoding' || key === 'contentMediaType') continue;
    if (key === 'additionalProperties') {
      if (value === false) continue;
      // a structural schema has properties or additionalProperties: known fields plus any others (Settings' gloo)
      if (s['properties'] && Object.keys(s['properties']).length > 0) out['x-kubernetes-preserve-unknown-fields'] = true;
      else out[key] = value === true ? { ...ANY } : structural(value);
    } else if (key === 'properties' && value && typeof value === 'object' && Object.keys(value).length === 0) {
      // `{}` objects (e.g. remoteAddress: {}): helm drops an empty `properties` map, so a CRD it applies
      // would differ from the one `legate crds` applies
      continue;
    } else if (key === 'properties' && value && typeof value === 'object') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, structural(sub)]));
    } else if (key === 'items') {
      out[key] = structural(value);
    } else if (key === 'const') {
      out['enum'] = [value];
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * The schema with every object keeping the fields it does not declare, in every group (Gloo's and Legate's own): clients
 * that do not ask for strict field validation (Helm, Argo CD, most controllers) would have a field Legate does not know
 * pruned without a word, and the resource stored and Accepted without it; kept, the controller (and the validating
 * webhook) report it by name, with a did-you-mean.
 */
export function keepUnknownFields(schema: Schema): Schema {
  const out: Schema = { ...schema };
  if (out['type'] === 'object' && out['properties'] && typeof out['properties'] === 'object') {
    out['x-kubernetes-preserve-unknown-fields'] = true;
    out['properties'] = Object.fromEntries(Object.entries(out['properties']).map(([k, v]) => [k, keepUnknownFields(v as Schema)]));
  }
  if (out['items'] && typeof out['items'] === 'object') out['items'] = keepUnknownFields(out['items'] as Schema);
  if (out['additionalProperties'] && typeof out['additionalProperties'] === 'object')
    out['additionalProperties'] = keepUnknownFields(out['additionalProperties'] as Schema);
  return out;
}

/** The status Legate writes (spec: status.statuses.<namespace>), plus a summary for printer columns. */
const STATUS_SCHEMA: Schema = {
  type: 'object',
  properties: {
    state: { type: 'string', description: "the writing controller's state: Pending, Accepted, Rejected or Warning" },
    reason: { type: 'string' },
    observedGeneration: { type: 'integer', format: 'int64' },
    statuses: {
      type: 'object',
      description: 'per controller namespace: {state, reason, reportedBy, subresourceStatuses}',
      additionalProperties: {
        type: 'object',
        properties: {
          state: { type: 'string' },
          reason: { type: 'string' },
          reportedBy: { type: 'string' },
          subresourceStatuses: { ...ANY, type: 'object' },
        },
      },
    },
  },
};

export interface CrdOptions {
  /** also define the kinds under Gloo Edge's groups, so unchanged Gloo manifests apply */
  glooGroups?: boolean;
}

/** One CRD per custom kind and group (Legate's group; with glooGroups, each Gloo alias group too). */
export function customResourceDefinitions(options: CrdOptions = {}): Schema[] {
  const crds: Schema[] = [];
  for (const kind of KIND_NAMES) {
    const info = kindInfo(kind);
    if (info.group === '') continue; // core Kubernetes kinds (Service, Secret…)
    const groups = [{ group: info.group, version: info.version }];
    if (options.glooGroups) {
      for (const alias of info.aliases) {
        const [group, version] = alias.split('/');
        if (group && version) groups.push({ group, version });
      }
    }
    // a short name resolves to one group only: with Gloo's groups installed it is Gloo's, as Gloo's docs use it
    for (const g of groups) crds.push(crdFor(kind, g.group, g.version, g.group !== info.group, options.glooGroups === true));
  }
  return crds;
}

function crdFor(kind: KindName, group: string, version: string, alias: boolean, glooGroups: boolean): Schema {
  const info = kindInfo(kind);
  const zodSchema = (KINDS[kind] as { spec?: z.ZodType }).spec;
  const typed = zodSchema
    ? structural(z.toJSONSchema(zodSchema, { target: 'openapi-3.0', unrepresentable: 'any', io: 'input' }))
    : { ...ANY, type: 'object' };
  const spec = keepUnknownFields(typed);
  const singular = kind.toLowerCase();
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${info.plural}.${group}`,
      labels: { 'app.kubernetes.io/part-of': 'legate', ...(alias ? { 'legate.dev/gloo-alias': 'true' } : {}) },
    },
    spec: {
      group,
      scope: 'Namespaced',
      names: {
        kind,
        listKind: `${kind}List`,
        plural: info.plural,
        singular,
        ...(alias === glooGroups ? { shortNames: [...info.shortNames] } : {}),
        categories: alias ? ['gloo', 'solo-io', 'legate'] : ['legate'],
      },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'State', type: 'string', jsonPath: '.status.state' },
            { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status: STATUS_SCHEMA,
              },
            },
          },
        },
      ],
    },
  };
}
