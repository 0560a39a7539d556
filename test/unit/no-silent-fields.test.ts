// No silent acceptance: every field a kind's schema accepts is read by translation or rendering, reported to the user,
// refused as NotSupported, or on the documented ACCEPTED_AND_IGNORED list (docs/resources.md, "Accepted and ignored
// fields"). How it works, and how it fails:
//
// - The walk: each kind's zod schema (controller/api/kinds.ts) down to its leaf fields, through objects, arrays (`[]`),
//   records (`*`), unions, lazies and optionals; an empty object (`random: {}`) is a leaf, a loose object's other keys
//   are `<other>`. notSupported(...) fields (and flags whose `true` is refused so) are covered by design.
// - Per field, specs that set it: generated from the schema with the required fields around it (LEAF_VALUES,
//   OBJECT_VALUES and SPECS in no-silent-fields.fixtures.ts supply what a refinement or translation needs), alone and
//   grafted into the kind's WORLD resource. A field no valid spec sets fails the test ("sets every field").
// - Per spec, one run of the real pure pipeline (runPipeline, as the translate goldens) with the WORLD: one resource of
//   each kind, all referencing each other. The resource under test enters already validated (PipelineMemo.validated)
//   with its spec wrapped in a Proxy that records every property read, deep, so parsing reads nothing: what is recorded
//   is what translation and rendering looked at. The rendered xDS is walked after the run: a value put into the output
//   as it is was read by being rendered.
// - A field counts when it is looked up by name (`o.field`, `'field' in o`, an array's elements or length, a record's
//   entries), in any run; when the reports of its run name it (or refuse an enclosing block as not supported); or,
//   when it was only copied along (a spread or rest into the IR), when some value of it changes the output (statuses
//   and xDS) against the spec without it. JSON.stringify (memo keys, equality) records nothing.
// - A field that no rule counts and that is not on ACCEPTED_AND_IGNORED (or READ_OUTSIDE_TRANSLATION) fails the test
//   with its path; a list entry that names no field, or a field that is read, fails it as stale; the docs must list
//   every entry. The first test shows a field added to a schema and read by nothing is caught.
// NO_SILENT_FIELD='Kind path' prints the specs tried for one field and what the pipeline made of them.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { KINDS, type KindName } from '../../controller/api/kinds.js';
import type { RawResource } from '../../controller/api/meta.js';
import { NOT_SUPPORTED } from '../../controller/api/primitives.js';
import { validateResource, type LegateResource, type ValidationResult } from '../../controller/api/resources.js';
import { runPipeline } from '../../controller/pipeline.js';
import { DEFAULT_RENDER_OPTIONS, type RenderOptions } from '../../controller/translate/render.js';
import {
  ACCEPTED_AND_IGNORED,
  EXTRA_WORLD,
  LEAF_VALUES,
  OBJECT_VALUES,
  READ_OUTSIDE_TRANSLATION,
  SPECS,
  WORLD,
  WORLD_NAME,
  WORLD_NAMESPACE,
} from './no-silent-fields.fixtures.js';

// ---- the schema walk ----

/** A path segment: a field name, `[]` (any array element) or `*` (any record key). */
type Seg = string;

interface Field {
  segs: Seg[];
  /** `a.b[].c.*` */
  path: string;
  notSupported: boolean;
  /** a loose object's other keys (`<other>`): nothing can read them by name */
  other: boolean;
  /** the leaf's schema */
  schema: z.ZodType;
}

const ARRAY = '[]';
const ANY_KEY = '*';
const OTHER = '<other>';

function show(segs: readonly Seg[]): string {
  return segs.map((s, i) => (s === ARRAY ? ARRAY : i === 0 ? s : `.${s}`)).join('');
}

/** One optional, nullable, default, readonly, lazy or pipe wrapper removed (the schema itself when none). */
function unwrap1(s: z.ZodType): z.ZodType {
  if (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault || s instanceof z.ZodReadonly)
    return s.unwrap() as z.ZodType;
  if (s instanceof z.ZodLazy) return s.unwrap() as z.ZodType;
  if (s instanceof z.ZodPipe) return s.in as z.ZodType;
  return s;
}

/** Every wrapper removed. */
function unwrap(s: z.ZodType): z.ZodType {
  for (let next = unwrap1(s); next !== s; next = unwrap1(s)) s = next;
  return s;
}

function isOptional(s: z.ZodType): boolean {
  return s.safeParse(undefined).success;
}

/**
 * notSupported(reason), or a flag whose one value Legate does not have is refused as NotSupported (`asyncMode: true`,
 * `enableGatewayController: false`): the other value is what Legate always does.
 */
function isNotSupported(s: z.ZodType): boolean {
  const inner = unwrap(s);
  const probes = inner instanceof z.ZodUnknown ? [{}] : inner instanceof z.ZodBoolean ? [true, false] : [];
  return probes.some((probe) => {
    const r = inner.safeParse(probe);
    return !r.success && r.error.issues.some((i) => i.message.startsWith(`${NOT_SUPPORTED}:`));
  });
}

function isLooseObject(s: z.ZodObject): boolean {
  const catchall = s._zod.def.catchall;
  return catchall !== undefined && !(catchall instanceof z.ZodNever);
}

function walk(schema: z.ZodType, segs: Seg[], out: Map<string, Field>, seen: Set<z.ZodType>): void {
  if (isNotSupported(schema)) {
    out.set(show(segs), { segs, path: show(segs), notSupported: true, other: false, schema });
    return;
  }
  let s = schema;
  // a lazy schema refers to itself (nested descriptors): walk it once
  for (;;) {
    if (s instanceof z.ZodLazy) {
      if (seen.has(s)) return;
      seen = new Set([...seen, s]);
    }
    const next = unwrap1(s);
    if (next === s) break;
    s = next;
  }
  // an empty object is a flag (`random: {}`): a leaf
  if (s instanceof z.ZodObject && (Object.keys(s.shape).length || isLooseObject(s))) {
    for (const [k, v] of Object.entries(s.shape as Record<string, z.ZodType>)) walk(v, [...segs, k], out, seen);
    if (isLooseObject(s)) {
      const at = [...segs, OTHER];
      out.set(show(at), { segs: at, path: show(at), notSupported: false, other: true, schema: s });
    }
    return;
  }
  if (s instanceof z.ZodArray) return walk(s.element as z.ZodType, [...segs, ARRAY], out, seen);
  if (s instanceof z.ZodRecord) return walk(s._zod.def.valueType as z.ZodType, [...segs, ANY_KEY], out, seen);
  if (s instanceof z.ZodUnion) {
    for (const o of s.options as z.ZodType[]) walk(o, segs, out, seen);
    return;
  }
  out.set(show(segs), { segs, path: show(segs), notSupported: false, other: false, schema: s });
}

function fieldsOf(schema: z.ZodType): Field[] {
  const out = new Map<string, Field>();
  walk(schema, [], out, new Set());
  return [...out.values()];
}

// ---- values from the schema ----

const STRINGS = [
  WORLD_NAME,
  '1s',
  '127.0.0.1',
  'https://example.com/w',
  '/w',
  'x-w',
  '10.0.0.0/8',
  'w.example.com',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'P-256',
  'TLSv1_2',
  'MINUTE',
  '.*',
  'AAAA',
  '000000FF',
];
const NUMBERS = [1, 2, 10, 100, 200, 0.5, 0, 65535, 1048576];

class NoValue extends Error {}

function lookup(kind: string, segs: readonly Seg[]): unknown[] {
  const at = show(segs);
  return Object.entries(LEAF_VALUES).flatMap(([key, values]) =>
    key === `${kind} ${at}` || key === at || at.endsWith(`.${key}`) ? values : [],
  );
}

/** A value the schema accepts (required fields only), or NoValue. */
function sample(kind: string, schema: z.ZodType, segs: readonly Seg[]): unknown {
  for (const v of lookup(kind, segs)) if (schema.safeParse(v).success) return v;
  const s = unwrap(schema);
  const first = (candidates: readonly unknown[]): unknown => {
    const v = candidates.find((c) => s.safeParse(c).success);
    if (v === undefined) throw new NoValue(`${kind} ${show(segs)}: no generated value passes; add one to LEAF_VALUES`);
    return v;
  };
  if (s instanceof z.ZodObject) {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s.shape as Record<string, z.ZodType>)) if (!isOptional(v)) o[k] = sample(kind, v, [...segs, k]);
    return completed(kind, s, segs, o);
  }
  if (s instanceof z.ZodArray) return first([[sample(kind, s.element as z.ZodType, [...segs, ARRAY])]]);
  if (s instanceof z.ZodRecord) return first([{ [WORLD_NAME]: sample(kind, s._zod.def.valueType as z.ZodType, [...segs, ANY_KEY]) }]);
  if (s instanceof z.ZodUnion) {
    for (const o of s.options as z.ZodType[]) {
      try {
        const v = sample(kind, o, segs);
        if (s.safeParse(v).success) return v;
      } catch (e) {
        if (!(e instanceof NoValue)) throw e;
      }
    }
    throw new NoValue(`${kind} ${show(segs)}: no union member gives a value`);
  }
  if (s instanceof z.ZodString) return first(STRINGS);
  if (s instanceof z.ZodNumber) return first(NUMBERS);
  if (s instanceof z.ZodBoolean) return first([true, false]);
  if (s instanceof z.ZodEnum) return first(s.options);
  if (s instanceof z.ZodLiteral) return first([...s.values]);
  if (s instanceof z.ZodUnknown || s instanceof z.ZodAny) return WORLD_NAME;
  return first([...STRINGS, ...NUMBERS, true, false, {}]);
}

/**
 * `o` with the OBJECT_VALUES for its path, or with one optional field more when the object's refinement wants one
 * ("set exactly one of …").
 */
function completed(kind: string, s: z.ZodObject, segs: readonly Seg[], given: Record<string, unknown>): Record<string, unknown> {
  let o = given;
  const at = show(segs);
  for (const [suffix, extra] of Object.entries(OBJECT_VALUES)) {
    if (at !== suffix && !at.endsWith(`.${suffix}`)) continue;
    const more = { ...extra, ...o };
    if (s.safeParse(more).success) o = more;
  }
  if (s.safeParse(o).success) return o;
  for (const [k, v] of Object.entries(s.shape as Record<string, z.ZodType>)) {
    if (k in o || isNotSupported(v)) continue;
    try {
      const more = { ...o, [k]: sample(kind, v, [...segs, k]) };
      if (s.safeParse(more).success) return more;
    } catch (e) {
      if (!(e instanceof NoValue)) throw e;
    }
  }
  return o;
}

/** Specs (alternatives, at unions) that set the field at `segs[i..]`, with the required fields around it. */
function build(kind: string, schema: z.ZodType, segs: readonly Seg[], i: number): unknown[] {
  if (i === segs.length) return [sample(kind, schema, segs)];
  const s = unwrap(schema);
  const seg = segs[i]!;
  if (s instanceof z.ZodUnion) {
    const out: unknown[] = [];
    for (const o of s.options as z.ZodType[]) {
      try {
        out.push(...build(kind, o, segs, i));
      } catch (e) {
        if (!(e instanceof NoValue)) throw e;
      }
    }
    if (!out.length) throw new NoValue(`${kind} ${show(segs)}: no union member has it`);
    return out;
  }
  if (s instanceof z.ZodObject) {
    const shape = s.shape as Record<string, z.ZodType>;
    if (seg === OTHER) return [{ ...(sample(kind, s, segs.slice(0, i)) as object), legateUnknownField: WORLD_NAME }];
    const child = shape[seg];
    if (!child) throw new NoValue(`${kind} ${show(segs)}: no ${seg} here`);
    const base: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(shape)) if (k !== seg && !isOptional(v)) base[k] = sample(kind, v, [...segs.slice(0, i), k]);
    return build(kind, child, segs, i + 1).map((v) => completed(kind, s, segs.slice(0, i), { ...base, [seg]: v }));
  }
  if (s instanceof z.ZodArray && seg === ARRAY) return build(kind, s.element as z.ZodType, segs, i + 1).map((v) => [v]);
  if (s instanceof z.ZodRecord && seg === ANY_KEY)
    return build(kind, s._zod.def.valueType as z.ZodType, segs, i + 1).map((v) => ({ [WORLD_NAME]: v }));
  throw new NoValue(`${kind} ${show(segs)}: cannot descend into ${seg}`);
}

/**
 * `base` (the world's spec) with the field of `built` grafted in: followed along the field's path while `base` has it
 * (an array's first element, a record's entry of the same key), the rest taken from `built`.
 */
function graft(base: unknown, built: unknown, segs: readonly Seg[]): unknown {
  if (!segs.length) return built;
  const [seg, ...rest] = segs as [Seg, ...Seg[]];
  if (seg === ARRAY) {
    if (!Array.isArray(base) || !base.length || !Array.isArray(built)) return built;
    return [graft(base[0], built[0], rest), ...base.slice(1)];
  }
  if (!isRecord(base) || !isRecord(built)) return built;
  // a record's entry is replaced whole (the world's entry of the same key may hold a conflicting choice)
  if (seg === ANY_KEY || seg === OTHER) return { ...base, ...built };
  return { ...base, [seg]: seg in base ? graft(base[seg], built[seg], rest) : built[seg] };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---- recording reads ----

/** The property reads of the resource under test, as paths (`[]` for any element); weak: copied, not looked up. */
class Reads {
  readonly named = new Map<string, Seg[]>();
  readonly copied = new Map<string, Seg[]>();
  /** off: outside a run; stringify: inside JSON.stringify (a copy); output: walking the rendered xDS (a rendering) */
  mode: 'on' | 'off' | 'output' | 'stringify' = 'off';
  private lastDescriptor: { target: object; prop: string } | undefined;
  private readonly proxies = new WeakMap<object, object>();

  wrap<T>(value: T, segs: readonly Seg[]): T {
    if (typeof value !== 'object' || value === null) return value;
    const known = this.proxies.get(value);
    if (known) return known as T;
    const isArray = Array.isArray(value);
    const proxy = new Proxy(value, {
      get: (target, prop, receiver) => {
        const v: unknown = Reflect.get(target, prop, receiver);
        if (typeof prop === 'symbol') return v;
        const copy = this.lastDescriptor?.target === target && this.lastDescriptor.prop === prop;
        this.lastDescriptor = undefined;
        // an array's elements are looked at by index, or counted (`setActions.length`: refused when not empty)
        const element = /^\d+$/.test(prop) || prop === 'length' ? ARRAY : undefined;
        const seg = isArray ? element : Object.hasOwn(target, prop) || !(prop in target) ? prop : undefined;
        if (seg === undefined) return v;
        const at = [...segs, seg];
        this.record(at, copy);
        const d = Object.getOwnPropertyDescriptor(target, prop);
        if (d && !d.configurable && !d.writable) return v;
        return this.wrap(v, at);
      },
      has: (target, prop) => {
        if (typeof prop === 'string' && !isArray) this.record([...segs, prop], false);
        return Reflect.has(target, prop);
      },
      getOwnPropertyDescriptor: (target, prop) => {
        if (typeof prop === 'string') this.lastDescriptor = { target, prop };
        return Reflect.getOwnPropertyDescriptor(target, prop);
      },
    });
    this.proxies.set(value, proxy);
    return proxy;
  }

  private record(segs: readonly Seg[], copy: boolean): void {
    if (this.mode === 'off') return;
    const into = (this.mode === 'on' && copy) || this.mode === 'stringify' ? this.copied : this.named;
    const key = show(segs);
    if (!into.has(key)) into.set(key, [...segs]);
  }

  /** Whether the field was read so (a record key `*` matches any key). */
  has(field: readonly Seg[], how: 'named' | 'copied'): boolean {
    for (const read of (how === 'named' ? this.named : this.copied).values()) if (matches(field, read)) return true;
    return false;
  }

  /** Reads every value reachable from `v` (the rendered output), recording those of the resource under test. */
  touch(v: unknown, seen = new Set<unknown>()): void {
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Map) for (const x of v.values()) this.touch(x, seen);
    else if (Array.isArray(v)) for (let i = 0; i < v.length; i++) this.touch(v[i], seen);
    else if (!ArrayBuffer.isView(v)) for (const k of Object.keys(v)) this.touch((v as Record<string, unknown>)[k], seen);
  }
}

/** Whether a read path is the field's (a record key `*` matches any key). */
function matches(field: readonly Seg[], read: readonly string[]): boolean {
  return field.length === read.length && field.every((s, i) => s === ANY_KEY || s === read[i]);
}

// ---- the world and a run ----

function apiVersion(kind: KindName): string {
  const info = KINDS[kind];
  return info.group ? `${info.group}/${info.version}` : info.version;
}

function raw(kind: KindName, spec: unknown, name = WORLD[kind]?.name ?? WORLD_NAME): RawResource {
  const info = KINDS[kind];
  const meta = { name, namespace: WORLD_NAMESPACE };
  if ('body' in info) {
    const body = isRecord(spec) ? spec : {};
    return { apiVersion: apiVersion(kind), kind, metadata: meta, body, origin: 'no-silent-fields' };
  }
  return { apiVersion: apiVersion(kind), kind, metadata: meta, spec, body: {}, origin: 'no-silent-fields' };
}

/** The schema of a kind's spec (or body, for Kubernetes' own kinds). */
function kindSchema(kind: KindName): z.ZodType {
  const info = KINDS[kind];
  return ('spec' in info ? info.spec : 'body' in info ? info.body : z.never()) as z.ZodType;
}

/** validateResource, with `schema` in place of the kind's (the self-test adds a field to one). */
function validate(kind: KindName, schema: z.ZodType, spec: unknown): ValidationResult {
  const r = raw(kind, spec);
  if (schema === kindSchema(kind)) return validateResource(r);
  const parsed = schema.safeParse(spec);
  if (!parsed.success) return { ok: false, reason: parsed.error.message };
  return { ok: true, resource: { kind, apiVersion: r.apiVersion, metadata: r.metadata, spec: parsed.data, raw: r } as LegateResource };
}

const VALIDATED_KINDS = (Object.keys(KINDS) as KindName[]).filter((k) => 'spec' in KINDS[k] || 'body' in KINDS[k]);

/** The world's VirtualService without the routes and sslConfig whose resources are not in this world. */
function withoutAbsent(spec: unknown, present: (k: KindName) => boolean, plain: boolean): unknown {
  const vs = structuredClone(spec) as { virtualHost: { routes?: Record<string, unknown>[] }; sslConfig?: unknown };
  vs.virtualHost.routes = vs.virtualHost.routes?.filter(
    (r) => !(r['graphqlApiRef'] && !present('GraphQLApi')) && !(r['graphqlSchemaRef'] && !present('GraphQLSchema')),
  );
  // a Matchable gateway under test serves it on the world's hybrid Gateway, a plain HTTP listener
  if (!present('Secret') || plain) delete vs.sslConfig;
  return vs;
}

/** The world's resources other than `kind`'s, validated once. */
function worldWithout(kind: KindName): Map<RawResource, ValidationResult> {
  const present = (k: KindName): boolean => WORLD[k]?.onlyFor?.includes(kind) ?? true;
  const out = new Map<RawResource, ValidationResult>();
  for (const k of VALIDATED_KINDS) {
    const w = WORLD[k];
    if (k === kind || !w || w.onlyUnderTest || !present(k)) continue;
    const plain = kind === 'MatchableHttpGateway' || kind === 'MatchableTcpGateway';
    const r = raw(k, k === 'VirtualService' ? withoutAbsent(w.spec, present, plain) : w.spec);
    const v = validateResource(r);
    if (!v.ok) throw new Error(`WORLD ${k}: ${v.reason}`);
    out.set(r, v);
  }
  for (const extra of EXTRA_WORLD) {
    if (extra.onlyFor && !extra.onlyFor.includes(kind)) continue;
    const r = raw(extra.kind as KindName, extra.spec, extra.name);
    const v = validateResource(r);
    if (!v.ok) throw new Error(`EXTRA_WORLD ${extra.kind} ${extra.name}: ${v.reason}`);
    out.set(r, v);
  }
  return out;
}

/** Runs the pipeline with `spec` as the world's `kind`, recording what it reads of that spec into `reads` (if given). */
interface Run {
  /** statuses and xDS, to compare runs */
  output: string;
  /** what the resource under test was told (errors and warnings) */
  reports: { message: string; code: string }[];
}

// as the translate goldens: a fixed edge-cache secret (the controller makes one at start), so the bearer check's cache renders
const RENDER: RenderOptions = {
  ...DEFAULT_RENDER_OPTIONS,
  wasm: {
    ...DEFAULT_RENDER_OPTIONS.wasm,
    bearerCheck: { ...DEFAULT_RENDER_OPTIONS.wasm.bearerCheck, verifiedValue: 'no-silent-fields-verified-value' },
  },
};

function run(kind: KindName, schema: z.ZodType, spec: unknown, world: Map<RawResource, ValidationResult>, reads?: Reads): Run {
  const v = validate(kind, schema, spec);
  if (!v.ok) throw new Error(`${kind}: ${v.reason}`);
  const subject = v.resource.raw;
  const wrapped = reads ? ({ ...v.resource, spec: reads.wrap(v.resource.spec, []) } as LegateResource) : v.resource;
  const validated = new Map(world).set(subject, { ok: true, resource: wrapped });
  const stringify = JSON.stringify;
  JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
    if (!reads) return stringify(...args);
    const mode = reads.mode;
    if (mode === 'on') reads.mode = 'stringify';
    try {
      return stringify(...args);
    } finally {
      reads.mode = mode;
    }
  }) as typeof JSON.stringify;
  try {
    if (reads) reads.mode = 'on';
    const out = runPipeline({
      resources: [...validated.keys()],
      lastAccepted: new Map(),
      options: { render: RENDER },
      memo: { validated, render: new Map() },
    });
    if (reads) reads.mode = 'output';
    reads?.touch(out.xds);
    const reports = out.reports
      .filter((r) => r.resource.kind === kind && r.resource.name === subject.metadata.name)
      .map((r) => ({ message: r.message, code: r.code }));
    if (reads) return { output: '', reports };
    const statuses = [...out.listed].filter(([, l]) => l.status.state !== 'Accepted').map(([k, l]) => [k, l.status.state, l.status.reason]);
    const xds = [...out.xds].map(([role, snap]) => [role, [...snap].map(([t, rs]) => [t, rs.map((r) => r.resource)])]);
    return { output: stringify({ statuses, xds }), reports };
  } finally {
    if (reads) reads.mode = 'off';
    JSON.stringify = stringify;
  }
}

/** The specs that set the field (parsed ones only): generated alone, generated merged into the world's, and SPECS'. */
function specsFor(kind: KindName, schema: z.ZodType, field: Field): { specs: unknown[]; why: string } {
  const candidates: unknown[] = [];
  let why: string | undefined;
  try {
    const built = build(kind, schema, field.segs, 0).slice(0, 4);
    const base = WORLD[kind]?.spec;
    for (const b of built) candidates.push(b, ...(base === undefined ? [] : [graft(base, b, field.segs)]));
  } catch (e) {
    if (!(e instanceof NoValue)) throw e;
    why = e.message;
  }
  const fixed = SPECS[`${kind} ${field.path}`];
  if (fixed !== undefined) candidates.push(fixed);
  const specs: unknown[] = [];
  for (const c of candidates) {
    const v = validate(kind, schema, c);
    if (v.ok) specs.push(c);
    else why ??= v.reason;
  }
  return { specs, why: why ?? 'no candidate' };
}

// ---- the check ----

interface KindResult {
  fields: Field[];
  /** field path → why no spec could set it */
  unset: Map<string, string>;
  read: Set<string>;
}

const DEBUG = process.env['NO_SILENT_FIELD'];

/** Which fields of `kind` (whose spec `schema` validates) are read, reported or cannot be set; `only` picks fields. */
function check(kind: KindName, schema = kindSchema(kind), only?: (path: string) => boolean): KindResult {
  const fields = fieldsOf(schema).filter((f) => !only || only(f.path));
  const world = worldWithout(kind);
  const reads = new Reads();
  const unset = new Map<string, string>();
  const read = new Set<string>();
  const copiedOnly = new Map<Field, unknown[]>();
  const reported = new Set<string>();
  for (const field of fields) {
    if (field.notSupported || field.other) continue;
    // read already while another field was under test (`if (o.field)` reads it, set or not)
    if (reads.has(field.segs, 'named')) {
      read.add(field.path);
      continue;
    }
    const { specs, why } = specsFor(kind, schema, field);
    if (!specs.length) {
      unset.set(field.path, why);
      continue;
    }
    for (const spec of specs.slice(0, 3)) {
      if (DEBUG === `${kind} ${field.path}`) console.log(JSON.stringify(spec), '\n', run(kind, schema, spec, world).output.slice(0, 3000));
      const { reports } = run(kind, schema, spec, world, reads);
      if (reports.some((r) => reportsField(r, field.segs))) reported.add(field.path);
      if (reads.has(field.segs, 'named') || reported.has(field.path)) break;
    }
    // looked up by name; a record's entries by iterating it; reported
    if (reported.has(field.path) || reads.has(field.segs, 'named') || (field.segs.at(-1) === ANY_KEY && reads.has(field.segs, 'copied')))
      read.add(field.path);
    else if (reads.has(field.segs, 'copied')) copiedOnly.set(field, specs);
  }
  // copied along (a spread into the IR): it acts when some value of it changes the output
  for (const [field, specs] of copiedOnly) if (changesOutput(kind, schema, field, specs, world)) read.add(field.path);
  return { fields, unset, read };
}

/**
 * Whether a report tells the user about the field: its message names the field (as generated: the first element, the
 * first record key; without a trailing element or key), or says an enclosing block is not supported.
 */
function reportsField(report: { message: string; code: string }, segs: readonly Seg[]): boolean {
  // a record key as `.w` or `["w"]`
  const names = (n: number): boolean =>
    [`.${WORLD_NAME}`, `[${JSON.stringify(WORLD_NAME)}]`].some((key) => {
      const at = segs
        .slice(0, n)
        .map((s, i) => (s === ARRAY ? '[0]' : s === ANY_KEY ? key : i === 0 ? s : `.${s}`))
        .join('');
      const found = report.message.indexOf(at);
      return found >= 0 && !/\w/.test(report.message[found + at.length] ?? '');
    });
  let n = segs.length;
  while (n > 0 && (segs[n - 1] === ARRAY || segs[n - 1] === ANY_KEY)) n--;
  if (names(n)) return true;
  const refused = report.code === 'NotSupported' || /not supported/i.test(report.message);
  for (let k = n - 1; refused && k > 0; k--) if (names(k)) return true;
  return false;
}

const REMOVE = Symbol('remove');

/** `spec` with the field's value (the first element, the first record entry) replaced, or removed. */
function withLeaf(spec: unknown, segs: readonly Seg[], value: unknown): unknown {
  const copy = structuredClone(spec);
  let at: unknown = copy;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i]!;
    const key = seg === ARRAY ? 0 : seg === ANY_KEY && isRecord(at) ? Object.keys(at)[0] : seg;
    if (key === undefined || typeof at !== 'object' || at === null) return undefined;
    const container = at as Record<string | number, unknown>;
    if (i === segs.length - 1) {
      if (value === REMOVE) {
        if (Array.isArray(container)) container.splice(0, 1);
        else delete container[key];
      } else container[key] = value;
    } else at = container[key];
  }
  return copy;
}

function changesOutput(
  kind: KindName,
  schema: z.ZodType,
  field: Field,
  specs: readonly unknown[],
  world: Map<RawResource, ValidationResult>,
): boolean {
  const leaf = unwrap(field.schema);
  const values = [
    ...lookup(kind, field.segs),
    ...(leaf instanceof z.ZodEnum ? leaf.options : []),
    ...(leaf instanceof z.ZodLiteral ? [...leaf.values] : []),
    true,
    false,
    ...STRINGS,
    ...NUMBERS,
  ].filter((v) => leaf.safeParse(v).success);
  for (const spec of specs.slice(0, 2)) {
    const outputs = new Set<string>();
    for (const value of [REMOVE, ...values.slice(0, 6)]) {
      const changed = withLeaf(spec, field.segs, value);
      if (changed === undefined || !validate(kind, schema, changed).ok) continue;
      outputs.add(run(kind, schema, changed, world).output);
      if (outputs.size > 1) return true;
    }
  }
  return false;
}

describe('no silent fields', () => {
  const results = new Map<KindName, KindResult>();
  beforeAll(() => {
    for (const kind of VALIDATED_KINDS) results.set(kind, check(kind));
  }, 120_000);
  const key = (kind: string, p: string) => `${kind} ${p}`;
  const listed = (k: string) => k in ACCEPTED_AND_IGNORED || k in READ_OUTSIDE_TRANSLATION;

  it('can fail: a field nothing reads is found, beside fields that are read, copied, reported', () => {
    const schema = (kindSchema('VirtualService') as z.ZodObject).extend({ legateNeverRead: z.string().optional() });
    const picked = ['legateNeverRead', 'displayName', 'virtualHost.domains[]', 'virtualHost.routes[].redirectAction.hostRedirect'];
    const r = check('VirtualService', schema, (p) => picked.includes(p));
    expect(r.fields.map((f) => f.path).sort()).toEqual([...picked].sort());
    expect([...r.read].sort()).toEqual(['virtualHost.domains[]', 'virtualHost.routes[].redirectAction.hostRedirect']);
  });

  it('walks every kind', () => {
    for (const [kind, r] of results) expect(r.fields.length, kind).toBeGreaterThan(0);
  });

  it('sets every field', () => {
    const unset = [...results].flatMap(([kind, r]) => [...r.unset].map(([p, why]) => `${key(kind, p)}: ${why}`));
    expect(unset, 'fields no generated spec sets: add a LEAF_VALUES or SPECS entry').toEqual([]);
  });

  it('reads every field, or reports it, or lists it as accepted and ignored', () => {
    const silent: string[] = [];
    for (const [kind, r] of results)
      for (const f of r.fields)
        if (!f.notSupported && !r.read.has(f.path) && !r.unset.has(f.path) && !listed(key(kind, f.path))) silent.push(key(kind, f.path));
    expect(silent, 'accepted, never read by translation or rendering, not NotSupported, not in ACCEPTED_AND_IGNORED').toEqual([]);
  });

  it('lists only fields that exist and are ignored', () => {
    const stale: string[] = [];
    for (const entry of [...Object.keys(ACCEPTED_AND_IGNORED), ...Object.keys(READ_OUTSIDE_TRANSLATION)]) {
      const [kind, p] = entry.split(' ') as [KindName, string];
      const r = results.get(kind);
      const f = r?.fields.find((x) => x.path === p);
      if (!r || !f) stale.push(`${entry}: no such field`);
      else if (f.notSupported) stale.push(`${entry}: NotSupported already`);
      else if (r.read.has(p)) stale.push(`${entry}: read (remove it from the list)`);
    }
    expect(stale).toEqual([]);
  });

  it('documents every accepted and ignored field in docs/resources.md', () => {
    const docs = fs.readFileSync(path.join(import.meta.dirname, '../../docs/resources.md'), 'utf8');
    const section = docs.split(/^## Accepted and ignored fields$/m)[1]?.split(/^## /m)[0] ?? '';
    const missing = Object.keys(ACCEPTED_AND_IGNORED).filter((e) => !section.includes(`\`${e}\``));
    expect(missing).toEqual([]);
  });
});
