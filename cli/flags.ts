// Flags declared once per command: parsed from argv (node:util parseArgs underneath) with clear
// errors, and turned into the command's --help text. Boolean flags also take `--flag=true|false`
// (glooctl users type `--debug=false`).
import { parseArgs } from 'node:util';
import { suggestion } from '../controller/api/issues.js';

/** A mistake in how the command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {}

interface BaseFlag {
  description: string;
  /** one-letter alias, e.g. `c` for -c */
  short?: string;
}
export interface StringFlag extends BaseFlag {
  type: 'string';
  default?: string;
  /** how help names the value, e.g. DIR */
  placeholder?: string;
  required?: boolean;
}
export interface PortFlag extends BaseFlag {
  type: 'port';
  default: number;
}
export interface IntFlag extends BaseFlag {
  type: 'int';
  default: number;
  min?: number;
  max?: number;
}
export interface HostPortFlag extends BaseFlag {
  type: 'hostPort';
  default: string;
}
export interface ChoiceFlag extends BaseFlag {
  type: 'choice';
  choices: readonly string[];
  default?: string;
}
export interface BooleanFlag extends BaseFlag {
  type: 'boolean';
  /** true: on unless `--no-NAME` or `--NAME=false` */
  default?: boolean;
}
/** a string flag that may be given several times (`-f a -f b`) */
export interface StringListFlag extends BaseFlag {
  type: 'strings';
  placeholder?: string;
}
export type FlagSpec = StringFlag | PortFlag | IntFlag | HostPortFlag | ChoiceFlag | BooleanFlag | StringListFlag;
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

type ValueOf<S> = S extends PortFlag | IntFlag
  ? number
  : S extends HostPortFlag
    ? { host: string; port: number }
    : S extends BooleanFlag
      ? boolean
      : S extends StringListFlag
        ? string[]
        : S extends { type: 'choice'; choices: readonly (infer C)[] }
          ? S extends { default: string }
            ? C
            : C | undefined
          : S extends { default: string } | { required: true }
            ? string
            : string | undefined;

/** The parsed values of a command's flags, typed from their declarations. */
export type FlagValues<F extends FlagSpecs> = { -readonly [K in keyof F]: ValueOf<F[K]> };

export interface Command<F extends FlagSpecs = FlagSpecs> {
  name: string;
  /** one line, for `legate --help` */
  summary: string;
  /** other names its last word answers to (legatectl's `create vs` for `create virtualservice`) */
  aliases?: readonly string[];
  flags: F;
  /** longer text after the usage line of `legate <name> --help` */
  details?: string;
  /** the operands it takes after its flags, for the usage line (e.g. `PATH…`); none when unset */
  operands?: string;
  run(values: FlagValues<F>, operands: string[]): Promise<number> | number;
}

/** Declares a command; keeps the flag types for its run(). */
export function command<const F extends FlagSpecs>(c: Command<F>): Command<F> {
  return c;
}

function placeholder(spec: FlagSpec): string {
  switch (spec.type) {
    case 'string':
    case 'strings':
      return spec.placeholder ?? 'VALUE';
    case 'port':
      return 'PORT';
    case 'int':
      return 'N';
    case 'hostPort':
      return 'HOST:PORT';
    case 'choice':
      return spec.choices.join('|');
    case 'boolean':
      return '';
  }
}

/** `legate <name> --help`: the usage line, the details, and every flag with its default. */
export function helpText<F extends FlagSpecs>(program: string, c: Command<F>): string {
  const required = Object.entries(c.flags)
    .filter(([, s]) => s.type === 'string' && s.required)
    .map(([name, s]) => `--${name} ${placeholder(s)}`);
  const operands = c.operands ? ` ${c.operands}` : '';
  const lines = [`Usage: ${program} ${c.name}${required.length ? ` ${required.join(' ')}` : ''} [flags]${operands}`, '', c.summary];
  if (c.details) lines.push('', c.details);
  const rows = Object.entries(c.flags).map(([name, s]) => {
    const value = placeholder(s);
    const left = `${s.short ? `-${s.short}, ` : '    '}--${name}${value ? ` ${value}` : ''}`;
    const repeat = s.type === 'strings' ? ' (repeatable)' : '';
    const dflt = 'default' in s && s.default !== undefined ? ` (default ${String(s.default)})` : '';
    return [left, `${s.description}${s.type === 'string' && s.required ? ' (required)' : ''}${repeat}${dflt}`] as const;
  });
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([l]) => l.length));
  lines.push('', 'Flags:', ...rows.map(([l, r]) => `  ${l.padEnd(width)}  ${r}`));
  return lines.join('\n') + '\n';
}

function toPort(value: string, name: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new UsageError(`--${name}: expected a port number, got ${JSON.stringify(value)}`);
  }
  return n;
}

function toInt(value: string, name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || n < min || n > max) {
    const range = min > Number.MIN_SAFE_INTEGER || max < Number.MAX_SAFE_INTEGER ? ` from ${min} to ${max}` : '';
    throw new UsageError(`--${name}: expected a whole number${range}, got ${JSON.stringify(value)}`);
  }
  return n;
}

export function toHostPort(value: string, name: string): { host: string; port: number } {
  const i = value.lastIndexOf(':');
  const host = value.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  const port = Number(value.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(`--${name}: expected HOST:PORT, got ${JSON.stringify(value)}`);
  }
  return { host, port };
}

/** Rewrites `--flag=true|false` of boolean flags into the forms parseArgs knows (`--flag`, `--no-flag`). */
function normalizeBooleans(args: readonly string[], flags: FlagSpecs): string[] {
  return booleanAssignments(
    args,
    Object.keys(flags).filter((name) => flags[name]?.type === 'boolean'),
  );
}

/** `--name=true|false` -> `--name` / `--no-name` for the given boolean flags (parseArgs takes no value for them). */
export function booleanAssignments(args: readonly string[], booleans: readonly string[]): string[] {
  return args.map((arg) => {
    const m = /^--([^=]+)=(.*)$/.exec(arg);
    if (!m || !booleans.includes(m[1]!)) return arg;
    const [, name, value] = m;
    if (value === 'true') return `--${name}`;
    if (value === 'false') return `--no-${name}`;
    throw new UsageError(`--${name}: expected true or false, got ${JSON.stringify(value)}`);
  });
}

/**
 * Parses argv against the declarations. Returns undefined when --help was asked for. With `operands`, arguments
 * that are not flags are allowed and pushed there.
 */
export function parseFlags<F extends FlagSpecs>(flags: F, args: readonly string[], operands?: string[]): FlagValues<F> | undefined {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const [name, spec] of Object.entries(flags)) {
    options[name] = {
      type: spec.type === 'boolean' ? 'boolean' : 'string',
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.type === 'strings' ? { multiple: true } : {}),
    };
  }
  let parsed: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    const result = parseArgs({
      args: normalizeBooleans(args, flags),
      options,
      allowPositionals: operands !== undefined,
      allowNegative: true,
      strict: true,
    });
    parsed = result.values;
    operands?.push(...result.positionals);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(parseArgsMessage(err, options));
  }
  if (parsed['help']) return undefined;
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(flags)) {
    const raw = parsed[name];
    switch (spec.type) {
      case 'boolean':
        out[name] = raw === undefined ? (spec.default ?? false) : raw === true;
        break;
      case 'strings':
        out[name] = Array.isArray(raw) ? raw.map(String) : [];
        break;
      case 'port':
        out[name] = raw === undefined ? spec.default : toPort(String(raw), name);
        break;
      case 'int':
        out[name] = raw === undefined ? spec.default : toInt(String(raw), name, spec.min, spec.max);
        break;
      case 'hostPort':
        out[name] = toHostPort(raw === undefined ? spec.default : String(raw), name);
        break;
      case 'choice': {
        const value = raw === undefined ? spec.default : String(raw);
        if (value !== undefined && !spec.choices.includes(value)) {
          throw new UsageError(
            `${spec.short ? `-${spec.short}` : `--${name}`}: expected ${oneOf(spec.choices)}, got ${JSON.stringify(value)}`,
          );
        }
        out[name] = value;
        break;
      }
      case 'string': {
        const value = raw === undefined ? spec.default : String(raw);
        if (value === undefined && spec.required) throw new UsageError(`--${name} ${placeholder(spec)} is required`);
        out[name] = value;
        break;
      }
    }
  }
  return out as FlagValues<F>;
}

/** `a, b or c` */
export function oneOf(choices: readonly string[]): string {
  return choices.length > 1 ? `${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}` : (choices[0] ?? '');
}

/** parseArgs' error as one clear line: an unknown flag with the nearest known one, no advice about '--'. */
function parseArgsMessage(err: unknown, options: Readonly<Record<string, { type: string; short?: string }>>): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown }).code;
  const unknown = /^Unknown option '(-{1,2})([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    const [, dashes, name] = unknown;
    const known = Object.entries(options).flatMap(([long, o]) => [`--${long}`, ...(o.short ? [`-${o.short}`] : [])]);
    const hint = suggestion(`${dashes}${name}`, known);
    return `unknown flag ${dashes}${name}${hint || '; see --help for the flags'}`;
  }
  const unexpected = /^Unexpected argument '([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && unexpected) return `unexpected argument '${unexpected[1]}'; see --help`;
  // a string flag without its value
  const missing = /^Option '(?:-\w, )?(-{1,2}[^ ']+)[^']*' argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  return message.split('. To specify')[0]!;
}
