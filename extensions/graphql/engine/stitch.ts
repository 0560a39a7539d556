// Stitched APIs (Gloo's stitchedSchema): each subschema is a GraphQL API config of its own, prepared and
// bound to its resolvers as a local API is; @graphql-tools/stitch merges them into one schema, with Gloo's
// typeMerge (selectionSet, queryName, args) as its merged-type config. The stitched schema's delegation runs
// the subschemas' resolvers in-process with the same request context, so dedup and headers work as usual.

import { stitchSchemas } from '@graphql-tools/stitch';
import type { GraphQLSchema } from 'graphql';
import type { GraphQLApiConfig, TypeMergeConfig } from '../../../common/graphql-config.js';
import type { ResolverEnv, ResolverInstance } from './resolver.js';
import { prepareApi, type PreparedApi } from './schema.js';

type Merge = Record<string, { selectionSet?: string; fieldName: string; args: (original: unknown) => Record<string, unknown> }>;

function valueAt(obj: unknown, path: string): unknown {
  let v = obj;
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

function mergeConfig(typeMerge: Record<string, TypeMergeConfig>): Merge {
  const merge: Merge = {};
  for (const [typeName, m] of Object.entries(typeMerge)) {
    const args = Object.entries(m.args);
    merge[typeName] = {
      ...(m.selectionSet !== undefined && m.selectionSet.trim() !== '' ? { selectionSet: m.selectionSet } : {}),
      fieldName: m.queryName,
      args: (original) => Object.fromEntries(args.map(([arg, path]) => [arg, valueAt(original, path)])),
    };
  }
  return merge;
}

/** Config-time problems of the subschemas (each prefixed with its name) and of their type merging. */
export function checkStitched(config: GraphQLApiConfig): string[] {
  const problems: string[] = [];
  const subs = prepareSubschemas(config, problems);
  if (problems.length === 0) {
    try {
      buildStitched(config, subs);
    } catch (err) {
      problems.push(`stitched schema: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}

function prepareSubschemas(config: GraphQLApiConfig, problems: string[]): PreparedApi[] {
  const subs: PreparedApi[] = [];
  for (const sub of config.stitched?.subschemas ?? []) {
    const prepared = prepareApi(sub.config);
    for (const p of prepared.problems) problems.push(`subschema ${sub.name}: ${p}`);
    if (sub.config.remote !== undefined) problems.push(`subschema ${sub.name}: a remote executor cannot be stitched yet`);
    const query = prepared.schema?.getQueryType();
    for (const [typeName, m] of Object.entries(sub.typeMerge)) {
      if (prepared.schema !== undefined && prepared.schema.getType(typeName) == null)
        problems.push(`subschema ${sub.name}: typeMerge ${typeName}: the subschema has no type ${typeName}`);
      const field = query?.getFields()[m.queryName];
      if (query != null && field === undefined)
        problems.push(`subschema ${sub.name}: typeMerge ${typeName}: the subschema's Query has no field ${m.queryName}`);
      for (const arg of Object.keys(m.args)) {
        if (field !== undefined && !field.args.some((a) => a.name === arg))
          problems.push(`subschema ${sub.name}: typeMerge ${typeName}: Query.${m.queryName} has no argument ${arg}`);
      }
    }
    subs.push(prepared);
  }
  return subs;
}

function buildStitched(config: GraphQLApiConfig, subs: readonly PreparedApi[]): GraphQLSchema {
  const defs = config.stitched?.subschemas ?? [];
  return stitchSchemas({
    subschemas: subs.map((p, i) => ({ schema: p.schema as GraphQLSchema, merge: mergeConfig(defs[i]!.typeMerge) })),
  });
}

/** The stitched schema with every subschema's fields bound to resolver instances (pushed on `instances`,
 * so the engine releases them); throws with every problem. */
export function stitchedSchema(config: GraphQLApiConfig, env: ResolverEnv, instances: ResolverInstance[]): GraphQLSchema {
  const problems: string[] = [];
  const subs = prepareSubschemas(config, problems);
  if (problems.length > 0) throw new Error(problems.join('; '));
  for (const prepared of subs) {
    const instanceFor = new Map<string, ResolverInstance>();
    for (const b of prepared.bindings) {
      const resolver = prepared.resolvers.get(b.resolution);
      if (resolver === undefined) continue;
      let instance = instanceFor.get(b.resolution);
      if (instance === undefined) {
        instance = resolver.instantiate(env);
        instances.push(instance);
        instanceFor.set(b.resolution, instance);
      }
      b.field.resolve = instance.resolve as typeof b.field.resolve;
    }
  }
  return buildStitched(config, subs);
}
