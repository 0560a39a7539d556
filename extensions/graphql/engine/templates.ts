// Resolver templates (Gloo syntax): `{$parent.<path>}`, `{$args.<path>}`, `{$headers.<name>}` in requests,
// `{$body.<path>}` in responses. Paths: `a.b`, `a[0]`, `a[*].b`, `a[*]` (on an object: [key, value] pairs,
// so `a[*][0]` are the keys and `a[*][1]` the values). Everything is compiled once, at createEngine time,
// into closures; rendering a template does no parsing.

export type TemplateSource = 'parent' | 'args' | 'headers' | 'body';

export interface TemplateContext {
  parent?: unknown;
  args?: unknown;
  headers?: Readonly<Record<string, string>>;
  body?: unknown;
}

export type Segment = { kind: 'key'; key: string } | { kind: 'index'; index: number } | { kind: 'all' };

export type Getter = (ctx: TemplateContext) => unknown;

export interface Placeholder {
  source: TemplateSource;
  /** the path below the source (for headers: one lowercased name) */
  path: Segment[];
  /** the placeholder as written, for error messages */
  text: string;
  get: Getter;
}

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

const hasOwn = Object.prototype.hasOwnProperty;

/** Walks `segments` from `index` on. Missing values are `undefined`; `[*]` maps over lists (and object entries). */
export function getPath(value: unknown, segments: readonly Segment[], index = 0): unknown {
  let current = value;
  for (let i = index; i < segments.length; i++) {
    const seg = segments[i]!;
    if (current === null || typeof current !== 'object') return undefined;
    switch (seg.kind) {
      case 'key':
        if (Array.isArray(current) || !hasOwn.call(current, seg.key)) return undefined;
        current = (current as Record<string, unknown>)[seg.key];
        break;
      case 'index':
        if (!Array.isArray(current)) return undefined;
        current = current[seg.index];
        break;
      case 'all': {
        const items: unknown[] = Array.isArray(current) ? current : Object.entries(current);
        const out = new Array<unknown>(items.length);
        for (let j = 0; j < items.length; j++) out[j] = getPath(items[j], segments, i + 1);
        return out;
      }
    }
  }
  return current;
}

/** Parses the part of a path after the source name: `` | `.a.b` | `[0].c` | `.a[*].b`. Bare paths (`a.b`) too. */
export function parsePath(text: string, where: string): Segment[] {
  const segments: Segment[] = [];
  let i = 0;
  // a bare path may start with a key directly
  if (text.length > 0 && text[0] !== '.' && text[0] !== '[') text = '.' + text;
  while (i < text.length) {
    const c = text[i];
    if (c === '.') {
      let j = i + 1;
      while (j < text.length && text[j] !== '.' && text[j] !== '[') j++;
      const key = text.slice(i + 1, j);
      if (key.length === 0 || /[\]{}\s]/.test(key)) throw new TemplateError(`${where}: bad path "${text}" (empty or invalid key)`);
      segments.push({ kind: 'key', key });
      i = j;
    } else if (c === '[') {
      const close = text.indexOf(']', i);
      if (close < 0) throw new TemplateError(`${where}: bad path "${text}" (unclosed "[")`);
      const inner = text.slice(i + 1, close).trim();
      if (inner === '*') segments.push({ kind: 'all' });
      else if (/^\d+$/.test(inner)) segments.push({ kind: 'index', index: Number(inner) });
      else throw new TemplateError(`${where}: bad path "${text}" ("[${inner}]" is neither an index nor [*])`);
      i = close + 1;
    } else {
      throw new TemplateError(`${where}: bad path "${text}" (unexpected "${c}")`);
    }
  }
  return segments;
}

function makeGetter(source: TemplateSource, path: Segment[]): Getter {
  switch (source) {
    case 'headers': {
      const name = path[0]?.kind === 'key' ? path[0].key : '';
      return (ctx) => {
        const h = ctx.headers;
        return h !== undefined && hasOwn.call(h, name) ? h[name] : undefined;
      };
    }
    case 'parent':
      return path.length === 0 ? (ctx) => ctx.parent : (ctx) => getPath(ctx.parent, path);
    case 'args':
      return path.length === 0 ? (ctx) => ctx.args : (ctx) => getPath(ctx.args, path);
    case 'body':
      return path.length === 0 ? (ctx) => ctx.body : (ctx) => getPath(ctx.body, path);
  }
}

const PLACEHOLDER = /\{\$([A-Za-z_]*)([^{}]*)\}/g;

function parsePlaceholder(sourceName: string, rest: string, text: string, allowed: readonly TemplateSource[], where: string): Placeholder {
  if (!(allowed as readonly string[]).includes(sourceName)) {
    const list = allowed.map((s) => `$${s}`).join(', ');
    throw new TemplateError(`${where}: unknown template variable "${text}" (allowed here: ${list})`);
  }
  const source = sourceName as TemplateSource;
  let path: Segment[];
  if (source === 'headers') {
    // a single segment: the header name (lowercased, as the request headers are)
    if (!rest.startsWith('.') || rest.length < 2)
      throw new TemplateError(`${where}: "${text}" must name a header, e.g. {$headers.authorization}`);
    const name = rest.slice(1).trim().toLowerCase();
    if (!/^[a-z0-9!#$%&'*+\-.^_`|~:]+$/.test(name)) throw new TemplateError(`${where}: "${text}" is not a valid header name`);
    path = [{ kind: 'key', key: name }];
  } else {
    path = parsePath(rest.trim(), where);
  }
  return { source, path, text, get: makeGetter(source, path) };
}

/** A string with placeholders, compiled. */
export interface CompiledString {
  readonly raw: string;
  /** no placeholders at all */
  readonly constant: boolean;
  /** the whole string is one placeholder (its value keeps its JSON type where that matters) */
  readonly whole: Placeholder | undefined;
  readonly placeholders: readonly Placeholder[];
  /** renders to a string; `encode` is applied to substituted values only (never to the literal text) */
  render(ctx: TemplateContext, encode?: (s: string) => string): string;
  /** the value: the placeholder's own value when `whole`, else the rendered string */
  value(ctx: TemplateContext): unknown;
}

/** How a substituted value becomes text: scalars as themselves, missing/null as '', lists of scalars
 * joined with ',', anything else as JSON. */
export function stringifyValue(v: unknown): string {
  if (v === undefined || v === null) return '';
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(v);
    default:
      if (Array.isArray(v) && v.every((x) => x === null || (typeof x !== 'object' && typeof x !== 'function'))) {
        return v.map((x) => stringifyValue(x)).join(',');
      }
      return JSON.stringify(v) ?? '';
  }
}

export function compileString(raw: string, allowed: readonly TemplateSource[], where: string): CompiledString {
  const parts: (string | Placeholder)[] = [];
  const placeholders: Placeholder[] = [];
  let last = 0;
  PLACEHOLDER.lastIndex = 0;
  for (let m = PLACEHOLDER.exec(raw); m !== null; m = PLACEHOLDER.exec(raw)) {
    if (m.index > last) parts.push(raw.slice(last, m.index));
    const p = parsePlaceholder(m[1] ?? '', m[2] ?? '', m[0], allowed, where);
    parts.push(p);
    placeholders.push(p);
    last = m.index + m[0].length;
  }
  if (last < raw.length) parts.push(raw.slice(last));
  // a stray "{$" that did not form a placeholder is almost certainly a typo
  const leftover = parts.some((p) => typeof p === 'string' && p.includes('{$'));
  if (leftover) throw new TemplateError(`${where}: unterminated or malformed template in "${raw}"`);

  if (placeholders.length === 0) {
    return {
      raw,
      constant: true,
      whole: undefined,
      placeholders,
      render: () => raw,
      value: () => raw,
    };
  }
  const whole = parts.length === 1 ? placeholders[0] : undefined;
  if (whole !== undefined) {
    const get = whole.get;
    return {
      raw,
      constant: false,
      whole,
      placeholders,
      render: (ctx, encode) => {
        const s = stringifyValue(get(ctx));
        return encode === undefined ? s : encode(s);
      },
      value: (ctx) => get(ctx),
    };
  }
  const frozen = parts;
  const render = (ctx: TemplateContext, encode?: (s: string) => string): string => {
    let out = '';
    for (let i = 0; i < frozen.length; i++) {
      const p = frozen[i]!;
      if (typeof p === 'string') out += p;
      else {
        const s = stringifyValue(p.get(ctx));
        out += encode === undefined ? s : encode(s);
      }
    }
    return out;
  };
  return { raw, constant: false, whole: undefined, placeholders, render, value: render };
}

/** A JSON value whose strings may hold templates, compiled. A string that is one whole placeholder keeps
 * the value's JSON type; a missing value there becomes `null`. */
export interface CompiledJson {
  readonly constant: boolean;
  readonly placeholders: readonly Placeholder[];
  value(ctx: TemplateContext): unknown;
}

export function compileJson(input: unknown, allowed: readonly TemplateSource[], where: string): CompiledJson {
  const placeholders: Placeholder[] = [];
  const build = (v: unknown, at: string): ((ctx: TemplateContext) => unknown) | { constant: unknown } => {
    if (typeof v === 'string') {
      const c = compileString(v, allowed, at);
      if (c.constant) return { constant: v };
      placeholders.push(...c.placeholders);
      if (c.whole !== undefined) {
        const get = c.whole.get;
        return (ctx) => {
          const x = get(ctx);
          return x === undefined ? null : x;
        };
      }
      return (ctx) => c.render(ctx);
    }
    if (Array.isArray(v)) {
      const items = v.map((x, i) => build(x, `${at}[${i}]`));
      if (items.every((x) => typeof x !== 'function')) return { constant: v };
      const fns = items.map((x) => (typeof x === 'function' ? x : () => x.constant));
      return (ctx) => fns.map((f) => f(ctx));
    }
    if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v).map(([k, x]) => [k, build(x, `${at}.${k}`)] as const);
      if (entries.every(([, x]) => typeof x !== 'function')) return { constant: v };
      const fns = entries.map(([k, x]) => [k, typeof x === 'function' ? x : () => x.constant] as const);
      return (ctx) => {
        const out: Record<string, unknown> = {};
        for (const [k, f] of fns) out[k] = f(ctx);
        return out;
      };
    }
    return { constant: v };
  };
  const root = build(input, where);
  if (typeof root !== 'function') {
    const constant = root.constant;
    return { constant: true, placeholders, value: () => constant };
  }
  return { constant: false, placeholders, value: root };
}

/** `resultRoot`: `{$body.data}` or a bare path `data.items`; empty/`{$body}` = the whole body. */
export function compileBodyPath(text: string, where: string): Getter {
  const trimmed = text.trim();
  if (trimmed === '') return (ctx) => ctx.body;
  if (trimmed.includes('{$')) {
    const c = compileString(trimmed, ['body'], where);
    if (c.whole === undefined) throw new TemplateError(`${where}: "${text}" must be a single {$body...} path`);
    return c.whole.get;
  }
  const path = parsePath(trimmed, where);
  return (ctx) => getPath(ctx.body, path);
}

/** A setter: a template over the (rooted) body, or (Gloo 1.10 style) a bare path without braces. */
export function compileSetter(text: string, where: string): Getter {
  if (!text.includes('{$')) {
    const path = parsePath(text.trim(), where);
    return (ctx) => getPath(ctx.body, path);
  }
  const c = compileString(text, ['body'], where);
  return (ctx) => c.value(ctx);
}
