// From a GraphQLApiConfig to an executable schema: SDL + the directive declarations Legate understands,
// `@resolve(name:)` bound to compiled REST resolvers. All config-time problems are collected as strings
// (checkApiConfig) rather than thrown one by one.

import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
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
import { compileRest, type CompiledRest } from './rest.js';

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
  /** resolution name -> compiled REST resolver (only those that compiled) */
  compiled: Map<string, CompiledRest>;
  /** resolution name -> its upstream, for those that compiled */
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

function checkUpstream(resolution: string, u: unknown, problems: string[]): u is ResolverUpstream {
  const where = `resolution "${resolution}" upstream`;
  if (!isRecord(u)) {
    problems.push(`${where}: missing`);
    return false;
  }
  const before = problems.length;
  if (typeof u['name'] !== 'string' || u['name'] === '') problems.push(`${where}: name must be a non-empty string`);
  const eps = u['endpoints'];
  if (!Array.isArray(eps)) problems.push(`${where} ${String(u['name'])}: endpoints must be a list`);
  else {
    eps.forEach((e: unknown, i) => {
      if (!isRecord(e) || typeof e['address'] !== 'string' || e['address'] === '')
        problems.push(`${where} ${String(u['name'])}: endpoints[${i}].address must be a non-empty string`);
      else if (typeof e['port'] !== 'number' || !Number.isInteger(e['port']) || e['port'] < 1 || e['port'] > 65535)
        problems.push(`${where} ${String(u['name'])}: endpoints[${i}].port must be an integer in 1..65535`);
    });
  }
  const t = u['tls'];
  if (t !== undefined && t !== null) {
    if (!isRecord(t)) problems.push(`${where} ${String(u['name'])}: tls must be an object`);
    else {
      for (const k of ['sni', 'rootCa', 'certChain', 'privateKey'] as const) {
        if (t[k] !== undefined && typeof t[k] !== 'string') problems.push(`${where} ${String(u['name'])}: tls.${k} must be a string`);
      }
      if ((t['certChain'] === undefined) !== (t['privateKey'] === undefined))
        problems.push(`${where} ${String(u['name'])}: tls.certChain and tls.privateKey go together`);
      if (problems.length === before) {
        try {
          // createSecureContext ignores a `ca` without any PEM block; check that one ourselves
          if (typeof t['rootCa'] === 'string') {
            const blocks = t['rootCa'].match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
            if (blocks.length === 0) throw new Error('rootCa holds no PEM certificate');
            for (const b of blocks) new X509Certificate(b);
          }
          tls.createSecureContext({
            ...(typeof t['rootCa'] === 'string' ? { ca: t['rootCa'] } : {}),
            ...(typeof t['certChain'] === 'string' ? { cert: t['certChain'] } : {}),
            ...(typeof t['privateKey'] === 'string' ? { key: t['privateKey'] } : {}),
          });
        } catch (err) {
          problems.push(`${where} ${String(u['name'])}: unusable TLS material (${err instanceof Error ? err.message : String(err)})`);
        }
      }
    }
  }
  return problems.length === before;
}

/** Parses, builds and checks everything; never throws. */
export function prepareApi(config: GraphQLApiConfig): PreparedApi {
  const problems: string[] = [];
  const bindings: Binding[] = [];
  const compiled = new Map<string, CompiledRest>();
  const upstreams = new Map<string, ResolverUpstream>();
  const result = (schema?: GraphQLSchema): PreparedApi => ({ problems, schema, bindings, compiled, upstreams });

  if (!isRecord(config)) {
    problems.push('the GraphQL API config must be an object');
    return result();
  }
  if (typeof config.maxDepth !== 'number' || !Number.isInteger(config.maxDepth) || config.maxDepth < 0) {
    if (config.maxDepth !== undefined) problems.push(`maxDepth must be a non-negative integer, got ${JSON.stringify(config.maxDepth)}`);
  }
  if (config.enableIntrospection !== undefined && typeof config.enableIntrospection !== 'boolean')
    problems.push('enableIntrospection must be a boolean');
  const resolutions: unknown = config.resolutions ?? {};
  if (!isRecord(resolutions)) {
    problems.push('resolutions must be a map of resolution name to resolver');
    return result();
  }

  // Resolvers first: compile every one, even if unused, so template mistakes are reported.
  for (const [name, r] of Object.entries(resolutions)) {
    if (!isRecord(r) || !isRecord(r['rest'])) {
      problems.push(`resolution "${name}" has no REST resolver (this engine executes REST resolvers only)`);
      continue;
    }
    const rest = r['rest'];
    if (!checkUpstream(name, rest['upstream'], problems)) continue;
    try {
      compiled.set(name, compileRest(name, rest as unknown as Parameters<typeof compileRest>[1]));
      upstreams.set(name, rest['upstream'] as ResolverUpstream);
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }

  if (typeof config.schemaDefinition !== 'string' || config.schemaDefinition.trim() === '') {
    problems.push('schemaDefinition must be a non-empty SDL string');
    return result();
  }
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
    const c = compiled.get(b.resolution);
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
