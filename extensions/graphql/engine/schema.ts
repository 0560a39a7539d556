// From a GraphQLApiConfig to an executable schema: SDL + the directive declarations Legate understands,
// `@resolve(name:)` bound to resolvers compiled by the factory of their kind (resolvers.ts). The config's
// shape is checked with the schema the controller uses too (common/graphql-config.ts). All config-time
// problems are collected as strings (checkApiConfig) rather than thrown one by one.

import {
  GraphQLError,
  buildASTSchema,
  getDirectiveValues,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  parse,
  validateSchema,
  type DefinitionNode,
  type DocumentNode,
  type GraphQLDirective,
  type GraphQLField,
  type GraphQLInterfaceType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import type { GraphQLApiConfig, ResolverUpstream } from '../../../common/contract.js';
import { ResolverConfigSchema, checkGraphQLApiConfigShape } from '../../../common/graphql-config.js';
import { loadDescriptorSet } from '../../../common/grpc-descriptors.js';
import { compileRemote } from './remote.js';
import type { ApiCompileContext, CompiledResolver } from './resolver.js';
import { compileResolver } from './resolvers.js';
import type { CompiledRest, CompiledRestResolver } from './rest.js';

const PRELUDE: Record<string, string> = {
  resolve: 'directive @resolve(name: String!) on FIELD_DEFINITION',
  cacheControl:
    'directive @cacheControl(maxAge: Int, inheritMaxAge: Boolean, scope: String) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION',
};

export interface Binding {
  typeName: string;
  fieldName: string;
  field: GraphQLField<unknown, unknown>;
  resolution: string;
}

export interface PreparedApi {
  problems: string[];
  schema: GraphQLSchema | undefined;
  bindings: Binding[];
  /** resolution name -> compiled resolver, of any kind (only those that compiled) */
  resolvers: Map<string, CompiledResolver>;
  /** the REST ones among them: compiled form and upstream (bench/micro drives them directly) */
  compiled: Map<string, CompiledRest>;
  upstreams: Map<string, ResolverUpstream>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function describeGraphQLError(err: unknown): string {
  if (err instanceof GraphQLError) {
    const loc = err.locations?.[0];
    return loc !== undefined ? `${err.message} (line ${loc.line}, column ${loc.column})` : err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** The descriptors are decoded on first use (only gRPC resolvers need them), once per config. */
function apiCompileContext(config: GraphQLApiConfig): ApiCompileContext {
  let root: ReturnType<ApiCompileContext['descriptors']> | undefined;
  let failure: Error | undefined;
  return {
    descriptors() {
      if (root !== undefined) return root;
      if (failure !== undefined) throw failure;
      try {
        const bin = config.grpcDescriptorSet;
        if (bin === undefined || bin === '') throw new Error('the API has no gRPC descriptors (grpcDescriptorSet)');
        root = loadDescriptorSet(bin);
        return root;
      } catch (err) {
        failure = err instanceof Error ? err : new Error(String(err));
        throw failure;
      }
    },
  };
}

/** Parses, builds and checks everything; never throws. */
export function prepareApi(config: GraphQLApiConfig): PreparedApi {
  const problems: string[] = [];
  const bindings: Binding[] = [];
  const resolvers = new Map<string, CompiledResolver>();
  const compiled = new Map<string, CompiledRest>();
  const upstreams = new Map<string, ResolverUpstream>();
  const result = (schema?: GraphQLSchema): PreparedApi => ({ problems, schema, bindings, resolvers, compiled, upstreams });

  if (!isRecord(config)) {
    problems.push('the GraphQL API config must be an object');
    return result();
  }
  problems.push(...checkGraphQLApiConfigShape(config));
  const resolutions: unknown = config.resolutions ?? {};
  if (!isRecord(resolutions)) return result();

  // Resolvers first: compile every one, even if unused, so template mistakes are reported. One whose shape
  // is wrong was reported above.
  const api = apiCompileContext(config);
  if (isRecord(config.remote)) {
    try {
      compileRemote(config.remote);
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  for (const [name, r] of Object.entries(resolutions)) {
    const shape = ResolverConfigSchema.safeParse(r);
    if (!shape.success) continue;
    try {
      const resolver = compileResolver(name, shape.data, api);
      resolvers.set(name, resolver);
      if (resolver.kind === 'rest') {
        compiled.set(name, (resolver as CompiledRestResolver).rest);
        upstreams.set(name, (resolver as CompiledRestResolver).upstream);
      }
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }

  if (typeof config.schemaDefinition !== 'string' || config.schemaDefinition.trim() === '') return result();
  let userDoc: DocumentNode;
  try {
    userDoc = parse(config.schemaDefinition);
  } catch (err) {
    problems.push(`schemaDefinition does not parse: ${describeGraphQLError(err)}`);
    return result();
  }
  const declared = new Set<string>();
  for (const d of userDoc.definitions) if (d.kind === 'DirectiveDefinition') declared.add(d.name.value);
  const prelude: DefinitionNode[] = [];
  for (const [name, sdl] of Object.entries(PRELUDE)) if (!declared.has(name)) prelude.push(...parse(sdl).definitions);

  let schema: GraphQLSchema;
  try {
    schema = buildASTSchema({ kind: userDoc.kind, definitions: [...prelude, ...userDoc.definitions] } as DocumentNode);
  } catch (err) {
    problems.push(`schemaDefinition is not a valid schema: ${describeGraphQLError(err)}`);
    return result();
  }
  for (const e of validateSchema(schema)) problems.push(`schemaDefinition is not a valid schema: ${describeGraphQLError(e)}`);
  if (schema.getQueryType() === undefined || schema.getQueryType() === null) return result();

  const resolveDirective = schema.getDirective('resolve') as GraphQLDirective;
  const nameArg = resolveDirective.args.find((a) => a.name === 'name');
  if (nameArg === undefined) {
    problems.push('the schema declares @resolve without a "name" argument');
    return result();
  }

  // Bindings, by precedence: @resolve on an object field; @resolve on an interface field, inherited by the
  // implementing object types' fields that have none; a resolution named `Type|field` that no @resolve
  // references binds that field (on an interface: its implementations' fields), as the controller assumes.
  const bound = new Map<string, Binding>(); // "Type.field" -> binding
  const referenced = new Set<string>();
  const bind = (type: GraphQLObjectType, fieldName: string, resolution: string): void => {
    const field = type.getFields()[fieldName];
    const key = `${type.name}.${fieldName}`;
    if (field === undefined || bound.has(key)) return;
    bound.set(key, { typeName: type.name, fieldName, field, resolution });
  };
  const implementations = (iface: GraphQLInterfaceType): readonly GraphQLObjectType[] => schema.getImplementations(iface).objects;
  const interfaceDirectives: [GraphQLInterfaceType, string, string][] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || !(isObjectType(type) || isInterfaceType(type))) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.astNode === undefined || field.astNode === null) continue;
      let values: Record<string, unknown> | undefined;
      try {
        values = getDirectiveValues(resolveDirective, field.astNode);
      } catch (err) {
        problems.push(`${type.name}.${field.name}: bad @resolve: ${describeGraphQLError(err)}`);
        continue;
      }
      if (values === undefined) continue;
      const resolution = values['name'];
      if (typeof resolution !== 'string' || resolution === '') {
        problems.push(`${type.name}.${field.name}: @resolve needs a non-empty name`);
        continue;
      }
      referenced.add(resolution);
      if (!Object.prototype.hasOwnProperty.call(resolutions, resolution)) {
        problems.push(`${type.name}.${field.name}: @resolve names resolution "${resolution}", which is not defined`);
        continue;
      }
      if (isInterfaceType(type)) interfaceDirectives.push([type, field.name, resolution]);
      else bind(type, field.name, resolution);
    }
  }
  for (const [iface, fieldName, resolution] of interfaceDirectives) {
    for (const impl of implementations(iface)) bind(impl, fieldName, resolution);
  }

  // A resolution named like `Type|field` must be for a field that exists.
  for (const name of Object.keys(resolutions)) {
    const m = /^([^|]+)\|([^|]+)$/.exec(name);
    if (m === null) continue;
    const typeName = m[1]!;
    const fieldName = m[2]!;
    const type = schema.getType(typeName);
    if (type === undefined || type === null) problems.push(`resolution "${name}": the schema has no type ${typeName}`);
    else if (!isObjectType(type) && !isInterfaceType(type))
      problems.push(`resolution "${name}": ${typeName} is not an object or interface type`);
    else if (type.getFields()[fieldName] === undefined) problems.push(`resolution "${name}": type ${typeName} has no field ${fieldName}`);
    else if (!referenced.has(name)) {
      if (isObjectType(type)) bind(type, fieldName, name);
      else for (const impl of implementations(type)) bind(impl, fieldName, name);
    }
  }
  bindings.push(...bound.values());

  // `$args.x` must name an argument of every field bound to the resolution.
  for (const b of bindings) {
    const c = resolvers.get(b.resolution);
    if (c === undefined) continue;
    const argNames = new Set(b.field.args.map((a) => a.name));
    const reported = new Set<string>();
    for (const p of c.placeholders) {
      if (p.source !== 'args') continue;
      const first = p.path[0];
      if (first === undefined || first.kind !== 'key') continue;
      if (!argNames.has(first.key) && !reported.has(first.key)) {
        reported.add(first.key);
        problems.push(`resolution "${b.resolution}" uses ${p.text} but field ${b.typeName}.${b.fieldName} has no argument "${first.key}"`);
      }
    }
  }

  return result(schema);
}
