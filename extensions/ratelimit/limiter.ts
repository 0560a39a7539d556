// The rate-limit decision, as Envoy's reference ratelimit service (envoyproxy/ratelimit) makes it:
//
// - Descriptor matching: each request descriptor is a list of entries (key, value). The walk starts at
//   the config named by the first entry (`legate_config=<ns>.<name>`; see common/ratelimit-config.ts);
//   at each level an entry matches the descriptor `key=value` first, else the descriptor with that key
//   and no value (the default: any value, each value counted on its own). A limit applies only when
//   the walk reaches the descriptor of the last entry and it has one; a shorter or longer descriptor
//   matches nothing. `unlimited` matches and never limits; `shadowMode` counts and reports but never
//   denies. `legate_basic=<scope>|<n>/<UNIT>` descriptors (options.ratelimitBasic) carry their own limit.
//   A config with a domain (the Settings' descriptors, for raw actions) is walked from the first entry
//   of every request in that domain.
// - Rule priority (Gloo's): among the tree rules a request's descriptors matched, only those of the highest
//   `weight` (default 0; inherited by nested descriptors) count, plus every `alwaysApply` one.
// - Set-style descriptors (Gloo's setActions/setDescriptors): a descriptor whose entry after the config's (or,
//   in a domain, whose first entry) is `generic_key=solo.setDescriptor.uniqueValue` holds a SET of entries.
//   A set rule matches when every one of its simpleDescriptors (key, and value when given) is in the set, in
//   any order, other entries allowed; the first matching rule in order applies, and every matching rule with
//   alwaysApply too. Each rule counts per value of the keys it names. Weights do not apply to set rules.
// - Limit overrides (Envoy's RateLimit.Override): a descriptor that carries its own limit is limited by it,
//   counted per its entries, whatever the config says (as Envoy's reference service does).
// - Fixed windows: the counter of a limit with unit U at time t is keyed by window start
//   floor(t / U) * U and expires at the window's end, so every hit counts in exactly one window.
// - One store round trip per request: every matched descriptor's counter is incremented at once.
import { createHash } from 'node:crypto';
import {
  RATE_LIMIT_UNITS,
  RateLimitKeys,
  SET_DESCRIPTOR_VALUE,
  UNIT_MS,
  parseBasicDescriptorValue,
  parseRateLimitServiceConfig,
  type DescriptorConfig,
  type Limit,
  type RateLimitServiceConfig,
  type SetDescriptorConfig,
} from '../../common/ratelimit-config.js';

export interface Entry {
  key: string;
  value: string;
}

/** Counters: increments each key by `addend`, setting its expiry when it is created; returns the new counts. */
export interface CounterStore {
  readonly name: string;
  increment(keys: readonly string[], ttlMs: readonly number[], addend: number): number[] | Promise<number[]>;
  close(): Promise<void>;
}

interface Node {
  limit?: Limit;
  unlimited: boolean;
  shadow: boolean;
  weight: number;
  alwaysApply: boolean;
  /** by `key\0value`, or `key` for the default */
  children: Map<string, Node>;
}

/** A config's rules: the descriptor tree and the set rules. */
interface Rules {
  tree: Map<string, Node>;
  sets: readonly SetDescriptorConfig[];
}

/** What a descriptor matched: a limit (or unlimited), and the counter it counts in. */
export interface Matched {
  limit?: Limit;
  unlimited: boolean;
  shadow: boolean;
  /** the counter's key without its window */
  counter: string;
  /** tree rules: their weight (the highest matched weight wins); unset: exempt (set rules, overrides) */
  weight?: number;
  alwaysApply?: boolean;
}

export type Code = 'OK' | 'OVER_LIMIT';

export interface DescriptorStatus {
  code: Code;
  current_limit?: { requests_per_unit: number; unit: Limit['unit'] };
  limit_remaining?: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface Decision {
  overall: Code;
  statuses: DescriptorStatus[];
  /** seconds until the window of the limit that denied ends (for retry-after); 0 when allowed */
  retryAfterSeconds: number;
  /** descriptors over their limit in shadow mode (allowed) */
  shadowed: number;
}

function build(descriptors: readonly DescriptorConfig[], weight = 0, alwaysApply = false): Map<string, Node> {
  const level = new Map<string, Node>();
  for (const d of descriptors) {
    const w = d.weight ?? weight;
    const always = d.alwaysApply ?? alwaysApply;
    const node: Node = {
      unlimited: d.unlimited === true,
      shadow: d.shadowMode === true,
      weight: w,
      alwaysApply: always,
      children: build(d.descriptors ?? [], w, always),
    };
    if (d.limit) node.limit = d.limit;
    level.set(d.value === undefined ? d.key : `${d.key}\0${d.value}`, node);
  }
  return level;
}

function counterValue(key: string, value: string): string {
  // a credential (the authorization header) never becomes part of a key or a log line as it is
  return key === RateLimitKeys.credential ? createHash('sha256').update(value).digest('base64url').slice(0, 22) : value;
}

/** A unit's length in ms. Not UNIT_MS[unit]: a unit parsed from a request's descriptor is a new string on every call,
 * and an optimized keyed load expects the one it saw (the service then went through a deoptimization every few hundred
 * calls, most of its CPU per call). */
export function unitMs(unit: Limit['unit']): number {
  switch (unit) {
    case 'SECOND':
      return UNIT_MS.SECOND;
    case 'MINUTE':
      return UNIT_MS.MINUTE;
    case 'HOUR':
      return UNIT_MS.HOUR;
    default:
      return UNIT_MS.DAY;
  }
}

/** Window start (ms since the epoch) of `unit` at `now`: floor(now / unit) * unit. */
export function windowStart(now: number, unit: Limit['unit']): number {
  const ms = unitMs(unit);
  return Math.floor(now / ms) * ms;
}

export class RateLimiter {
  private configs = new Map<string, Rules>();
  /** rules matched from the first entry, by domain */
  private domains = new Map<string, Rules>();
  private summary: Record<string, number> = {};

  constructor(private readonly store: CounterStore) {}

  /** Replaces every config at once (a set from the controller); throws listing problems, keeping the old set. */
  apply(raw: readonly unknown[]): void {
    const next = new Map<string, Rules>();
    const domains = new Map<string, Rules>();
    const problems: string[] = [];
    const summary: Record<string, number> = {};
    for (const r of raw) {
      let c: RateLimitServiceConfig;
      try {
        c = parseRateLimitServiceConfig(r);
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
        continue;
      }
      const rules: Rules = { tree: build(c.descriptors), sets: c.setDescriptors ?? [] };
      if (c.domain !== undefined) {
        if (domains.has(c.domain)) problems.push(`${c.name}: a second config for domain ${c.domain}`);
        else domains.set(c.domain, rules);
      } else next.set(c.name, rules);
      summary[c.name] = c.descriptors.length;
    }
    if (problems.length) throw new Error(`cannot load RateLimitConfigs: ${problems.join('; ')}`);
    this.configs = next;
    this.domains = domains;
    this.summary = summary;
  }

  /** config name -> number of top-level descriptors */
  configNames(): Record<string, number> {
    return { ...this.summary };
  }

  /** The first limit one request descriptor matches (pure); undefined: no limit applies. */
  match(domain: string, entries: readonly Entry[]): Matched | undefined {
    return this.matchAll(domain, entries)[0];
  }

  /** What one request descriptor matches (pure): its limits (set rules can be several), none when no limit applies. */
  matchAll(domain: string, entries: readonly Entry[], override?: Limit): Matched[] {
    const first = entries[0];
    if (!first) return [];
    const rules = this.domains.get(domain);
    if (rules) return override ? [overridden(domain, entries, 0, override)] : matchRules(rules, entries, 0, domain);
    let counter = `${domain}|${first.key}=${first.value}`;
    if (first.key === RateLimitKeys.basic) {
      const limit = parseBasicDescriptorValue(first.value);
      if (!limit || entries.length < 2) return [];
      for (let i = 1; i < entries.length; i++) counter += `|${entries[i]!.key}=${counterValue(entries[i]!.key, entries[i]!.value)}`;
      return [{ limit, unlimited: false, shadow: false, counter }];
    }
    if (first.key !== RateLimitKeys.config) return [];
    const config = this.configs.get(first.value);
    if (!config) return [];
    return override ? [overridden(counter, entries, 1, override)] : matchRules(config, entries, 1, counter);
  }

  /**
   * Decides a request: counts every limited descriptor in its window, then judges each. `overrides[i]`: the
   * limit descriptor i carries (Envoy's RateLimit.Override), if any.
   */
  decide(
    domain: string,
    descriptors: readonly (readonly Entry[])[],
    addend: number,
    now: number,
    overrides: readonly (Limit | undefined)[] = [],
  ): Decision | Promise<Decision> {
    const matched = prioritise(descriptors.map((d, i) => this.matchAll(domain, d, overrides[i])));
    const keys: string[] = [];
    const ttls: number[] = [];
    const starts: number[] = [];
    for (const list of matched)
      for (const m of list) {
        if (!m.limit || m.unlimited) continue;
        const start = windowStart(now, m.limit.unit);
        starts.push(start);
        keys.push(`${m.counter}|${m.limit.unit}|${start}`);
        // a little past the window's end, so a clock a few ms apart never sees it vanish early
        ttls.push(start + unitMs(m.limit.unit) - now + 1000);
      }
    if (!keys.length) return { overall: 'OK', statuses: matched.map(() => ({ code: 'OK' })), retryAfterSeconds: 0, shadowed: 0 };
    const counts = this.store.increment(keys, ttls, addend);
    return Array.isArray(counts) ? judge(matched, counts, starts, now) : counts.then((c) => judge(matched, c, starts, now));
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

/** The limit of an Envoy override, when its unit is one Legate counts in. */
export function overrideLimit(o: { requests_per_unit?: number; unit?: string } | undefined): Limit | undefined {
  if (!o?.requests_per_unit || !(RATE_LIMIT_UNITS as readonly string[]).includes(o.unit ?? '')) return undefined;
  return { requestsPerUnit: o.requests_per_unit, unit: o.unit as Limit['unit'] };
}

function overridden(prefix: string, entries: readonly Entry[], from: number, limit: Limit): Matched {
  let counter = `${prefix}|override`;
  for (let i = from; i < entries.length; i++) counter += `|${entries[i]!.key}=${counterValue(entries[i]!.key, entries[i]!.value)}`;
  return { limit, unlimited: false, shadow: false, counter };
}

/** A descriptor from `from` on: set-style (behind the marker) against the set rules, else down the tree. */
function matchRules(rules: Rules, entries: readonly Entry[], from: number, prefix: string): Matched[] {
  const marker = entries[from];
  if (marker?.key === 'generic_key' && marker.value === SET_DESCRIPTOR_VALUE) return matchSets(rules.sets, entries.slice(from + 1), prefix);
  const m = walk(rules.tree, entries, from, prefix);
  return m ? [m] : [];
}

/** The set rules a set of entries matches: the first in order, and every alwaysApply one. */
function matchSets(sets: readonly SetDescriptorConfig[], entries: readonly Entry[], prefix: string): Matched[] {
  const values = new Map<string, string>();
  // a key the actions produced twice: the first value, as a set holds each key once
  for (const e of entries) if (!values.has(e.key)) values.set(e.key, e.value);
  const out: Matched[] = [];
  let first = true;
  sets.forEach((rule, i) => {
    if (!first && !rule.alwaysApply) return;
    const ok = rule.simpleDescriptors.every((sd) => values.has(sd.key) && (sd.value === undefined || values.get(sd.key) === sd.value));
    if (!ok) return;
    first = false;
    if (!rule.limit && !rule.unlimited) return;
    let counter = `${prefix}|set#${i}`;
    for (const sd of rule.simpleDescriptors) counter += `|${sd.key}=${counterValue(sd.key, values.get(sd.key)!)}`;
    out.push({ ...(rule.limit ? { limit: rule.limit } : {}), unlimited: rule.unlimited === true, shadow: false, counter });
  });
  return out;
}

/** Gloo's rule priority: of the tree rules matched, only the highest weight's count, and every alwaysApply one. */
function prioritise(matched: Matched[][]): Matched[][] {
  let top = -1;
  for (const list of matched) for (const m of list) if (m.weight !== undefined && m.weight > top) top = m.weight;
  if (top <= 0) return matched;
  return matched.map((list) => list.filter((m) => m.weight === undefined || m.weight === top || m.alwaysApply));
}

/** Walks `entries` from index `from` down the tree; the limit of the descriptor the last entry reaches. */
function walk(tree: Map<string, Node>, entries: readonly Entry[], from: number, prefix: string): Matched | undefined {
  let level: Map<string, Node> | undefined = tree;
  let found: Node | undefined;
  let counter = prefix;
  for (let i = from; i < entries.length; i++) {
    const e = entries[i]!;
    if (!level) return undefined;
    const node: Node | undefined = level.get(`${e.key}\0${e.value}`) ?? level.get(e.key);
    if (!node) return undefined;
    counter += `|${e.key}=${counterValue(e.key, e.value)}`;
    found = i === entries.length - 1 ? node : undefined;
    level = node.children.size ? node.children : undefined;
  }
  if (!found || (!found.limit && !found.unlimited)) return undefined;
  return {
    ...(found.limit ? { limit: found.limit } : {}),
    unlimited: found.unlimited,
    shadow: found.shadow,
    counter,
    weight: found.weight,
    ...(found.alwaysApply ? { alwaysApply: true } : {}),
  };
}

/** Each descriptor's status: its worst limit (over, else the least remaining); OK when none applies. */
function judge(matched: readonly (readonly Matched[])[], counts: readonly number[], starts: readonly number[], now: number): Decision {
  let overall = 'OK' as Code;
  let retryAfterMs = 0;
  let shadowed = 0;
  let k = 0;
  const statuses = matched.map((list): DescriptorStatus => {
    let worst: DescriptorStatus = { code: 'OK' };
    for (const m of list) {
      if (!m.limit || m.unlimited) continue;
      const count = counts[k] ?? 0;
      const resetMs = starts[k]! + unitMs(m.limit.unit) - now;
      k++;
      const over = count > m.limit.requestsPerUnit;
      if (over && m.shadow) shadowed++;
      const code: Code = over && !m.shadow ? 'OVER_LIMIT' : 'OK';
      if (code === 'OVER_LIMIT') {
        overall = 'OVER_LIMIT';
        retryAfterMs = Math.max(retryAfterMs, resetMs);
      }
      const status: DescriptorStatus = {
        code,
        current_limit: { requests_per_unit: m.limit.requestsPerUnit, unit: m.limit.unit },
        limit_remaining: Math.max(0, m.limit.requestsPerUnit - count),
        duration_until_reset: { seconds: Math.floor(resetMs / 1000), nanos: (resetMs % 1000) * 1e6 },
      };
      const worse =
        worst.current_limit === undefined ||
        (code === 'OVER_LIMIT' && worst.code !== 'OVER_LIMIT') ||
        (code === worst.code && status.limit_remaining! < worst.limit_remaining!);
      if (worse) worst = status;
    }
    return worst;
  });
  return { overall, statuses, retryAfterSeconds: overall === 'OVER_LIMIT' ? Math.max(1, Math.ceil(retryAfterMs / 1000)) : 0, shadowed };
}

/** The in-memory store: one process's counters (the embedded default; not shared between replicas). */
export class MemoryStore implements CounterStore {
  readonly name = 'memory';
  private counts = new Map<string, { n: number; expires: number }>();
  private timer: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.timer = setInterval(() => this.sweep(), 5000);
    this.timer.unref();
  }

  increment(keys: readonly string[], ttlMs: readonly number[], addend: number): number[] {
    const now = this.now();
    return keys.map((key, i) => {
      const c = this.counts.get(key);
      if (c && c.expires > now) {
        c.n += addend;
        return c.n;
      }
      this.counts.set(key, { n: addend, expires: now + (ttlMs[i] ?? 1000) });
      return addend;
    });
  }

  size(): number {
    return this.counts.size;
  }

  sweep(): void {
    const now = this.now();
    for (const [k, c] of this.counts) if (c.expires <= now) this.counts.delete(k);
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    return Promise.resolve();
  }
}
