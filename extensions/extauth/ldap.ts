// The ldap step's client (ldapts): bind as the user of the Basic credentials (DN from userDnTemplate,
// the name DN-escaped), then read the user's entry (base scope, searchFilter) for its group membership
// attribute. Connections are pooled per server (pool.maxSize kept, pool.initialSize opened up front;
// more are opened on the fly when all are busy). Outcomes are kept a short while (LDAP_CACHE_MS) by a
// digest of DN and password, so a burst of requests from one user binds once. Every failure to reach
// or understand the server is `unavailable` (the step denies); the credential is never logged.
import { createHash } from 'node:crypto';
import { Client, InvalidCredentialsError, NoSuchObjectError } from 'ldapts';
import type { LdapStepConfig } from '../../common/auth-config.js';

/** How long an LDAP outcome (allowed, forbidden, bad credentials) is reused. */
export const LDAP_CACHE_MS = 10_000;
const CACHE_MAX = 10_000;
/** Per LDAP operation, and for connecting. */
export const LDAP_TIMEOUT_MS = 2_000;

export type LdapVerdict =
  | { verdict: 'allow'; dn: string }
  /** bad user name or password (bind refused, or no such entry): 401 */
  | { verdict: 'invalid_credentials' }
  /** authenticated but in none of allowedGroups: 403 */
  | { verdict: 'forbidden'; dn: string }
  /** the server is unreachable, too slow or answered something unexpected */
  | { verdict: 'unavailable'; detail: string };

/** RFC 4514 escaping of an attribute value (the user name placed in the DN template). */
export function escapeDnValue(value: string): string {
  let out = value.replace(/[\\,+"<>;=\0]/g, (c) => (c === '\0' ? '\\00' : `\\${c}`));
  if (out.startsWith(' ') || out.startsWith('#')) out = `\\${out}`;
  if (out.endsWith(' ') && out.length > 1) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** A DN compared as LDAP does for our purpose: case-insensitive, no spaces around separators. */
export function normalizeDn(dn: string): string {
  return dn
    .split(/(?<!\\),/)
    .map((rdn) => rdn.trim().replace(/\s*=\s*/, '='))
    .join(',')
    .toLowerCase();
}

/** A pool of connections to one server. */
export class LdapPool {
  private readonly idle: Client[] = [];
  private open = 0;
  constructor(
    readonly url: string,
    private readonly maxSize: number,
    initialSize: number,
  ) {
    for (let i = 0; i < Math.min(initialSize, maxSize); i++) this.idle.push(this.create());
  }

  private create(): Client {
    this.open++;
    return new Client({ url: this.url, timeout: LDAP_TIMEOUT_MS, connectTimeout: LDAP_TIMEOUT_MS });
  }

  /** Runs `fn` on a connection; a connection that failed is closed, never returned to the pool. */
  async with<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    const client = this.idle.pop() ?? this.create();
    let healthy = false;
    try {
      const out = await fn(client);
      healthy = true;
      return out;
    } catch (err) {
      // a refused bind or a missing entry is an answer, the connection is fine
      healthy = err instanceof InvalidCredentialsError || err instanceof NoSuchObjectError;
      throw err;
    } finally {
      if (healthy && this.idle.length < this.maxSize) this.idle.push(client);
      else this.drop(client);
    }
  }

  private drop(client: Client): void {
    this.open--;
    client.unbind().catch(() => undefined);
  }

  get size(): { idle: number; open: number } {
    return { idle: this.idle.length, open: this.open };
  }

  close(): void {
    for (const c of this.idle.splice(0)) this.drop(c);
  }
}

function digest(...parts: string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex');
}

/** The ldap step's decision logic over a pool (shared by steps on the same server). */
export class LdapAuthenticator {
  private readonly cache = new Map<string, { until: number; verdict: LdapVerdict }>();
  private readonly groups: Set<string>;
  constructor(
    private readonly config: LdapStepConfig,
    private readonly pool: LdapPool,
  ) {
    this.groups = new Set(config.allowedGroups.map(normalizeDn));
  }

  userDn(user: string): string {
    return this.config.userDnTemplate.replace('%s', escapeDnValue(user));
  }

  /** Cached outcome for these credentials, if still fresh. */
  cached(user: string, password: string, now = Date.now()): LdapVerdict | undefined {
    return this.cachedEntry(user, password, now)?.verdict;
  }

  /** The cached outcome and until when it holds (epoch ms), if still fresh. */
  cachedEntry(user: string, password: string, now = Date.now()): { until: number; verdict: LdapVerdict } | undefined {
    const hit = this.cache.get(digest(this.userDn(user), password));
    return hit && hit.until > now ? hit : undefined;
  }

  async authenticate(user: string, password: string): Promise<LdapVerdict> {
    // an empty password would be an unauthenticated bind, which LDAP servers accept
    if (user === '' || password === '') return { verdict: 'invalid_credentials' };
    const dn = this.userDn(user);
    const key = digest(dn, password);
    const hit = this.cache.get(key);
    const now = Date.now();
    if (hit && hit.until > now) return hit.verdict;
    const verdict = await this.ask(dn, password);
    if (verdict.verdict !== 'unavailable') {
      if (this.cache.size >= CACHE_MAX) this.sweep(now, true);
      this.cache.set(key, { until: now + LDAP_CACHE_MS, verdict });
    }
    return verdict;
  }

  private async ask(dn: string, password: string): Promise<LdapVerdict> {
    const c = this.config;
    const sa = c.serviceAccount;
    try {
      const entry = await this.pool.with(async (client) => {
        await client.bind(dn, password);
        if (c.disableGroupChecking || (sa && sa.checkGroupsWithServiceAccount)) return undefined;
        return this.readGroups(client, dn);
      });
      if (c.disableGroupChecking) return { verdict: 'allow', dn };
      let groups = entry;
      if (sa && sa.checkGroupsWithServiceAccount)
        groups = await this.pool.with(async (client) => {
          await client.bind(sa.username, sa.password);
          return this.readGroups(client, dn);
        });
      if (groups === undefined) return { verdict: 'invalid_credentials' };
      return groups.some((g) => this.groups.has(normalizeDn(g))) ? { verdict: 'allow', dn } : { verdict: 'forbidden', dn };
    } catch (err) {
      if (err instanceof InvalidCredentialsError) return { verdict: 'invalid_credentials' };
      if (err instanceof NoSuchObjectError) return { verdict: 'invalid_credentials' };
      const detail = err instanceof Error ? `${err.name}: ${err.message}` : 'error';
      return { verdict: 'unavailable', detail: detail.slice(0, 200) };
    }
  }

  /** The user's entry's membership values; undefined when the entry does not match searchFilter. */
  private async readGroups(client: Client, dn: string): Promise<string[] | undefined> {
    const attr = this.config.membershipAttributeName;
    const { searchEntries } = await client.search(dn, { scope: 'base', filter: this.config.searchFilter, attributes: [attr] });
    const entry = searchEntries[0];
    if (!entry) return undefined;
    const key = Object.keys(entry).find((k) => k.toLowerCase() === attr.toLowerCase());
    const value = key === undefined ? [] : entry[key];
    const list = Array.isArray(value) ? value : value === undefined ? [] : [value];
    return list.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v)));
  }

  sweep(now = Date.now(), hard = false): void {
    for (const [k, v] of this.cache) if (hard || v.until <= now) this.cache.delete(k);
  }
}
