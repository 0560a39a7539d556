// Shared clients of the auth steps, by key, with reference counting: an introspection endpoint with its
// cache, a JWK set with its refresh timer, an HTTP agent per origin, and whatever later steps connect to
// (LDAP, Redis, OIDC providers). Each loaded config holds one reference per key its steps asked for; a
// config update builds the new configs first (taking references, so what they share with the old ones is
// reused as it is, cache and connections included) and then releases the old ones: a client no config
// uses any more is disposed (timers stopped, connections closed).

interface Entry {
  value: unknown;
  refs: number;
  dispose: (value: unknown) => void;
}

export class SharedPool {
  private readonly entries = new Map<string, Entry>();

  /**
   * The client at `key`, created by `create` when there is none; takes one reference (release() gives it
   * back). `dispose` runs when the last reference is released. A key names one kind of client: prefix it
   * with the kind (`introspector:…`).
   */
  get<T>(key: string, create: () => T, dispose: (value: T) => void): T {
    let e = this.entries.get(key);
    if (e === undefined) {
      e = { value: create(), refs: 0, dispose: dispose as (value: unknown) => void };
      this.entries.set(key, e);
    }
    e.refs++;
    return e.value as T;
  }

  /** Gives back one reference of `key`; the last one disposes the client. */
  release(key: string): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    if (--e.refs > 0) return;
    this.entries.delete(key);
    e.dispose(e.value);
  }

  /** The clients whose key starts with `prefix` (for stats). */
  *values<T>(prefix: string, is: (v: unknown) => v is T): Iterable<T> {
    for (const [key, e] of this.entries) if (key.startsWith(prefix) && is(e.value)) yield e.value;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Disposes everything (service stop). */
  clear(): void {
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) e.dispose(e.value);
  }
}

/**
 * A config's view of the pool: records the keys it took, so the config can give them all back when it is
 * replaced or removed (or when building it failed half-way).
 */
export class PoolLease {
  readonly keys: string[] = [];

  constructor(private readonly pool: SharedPool) {}

  get<T>(key: string, create: () => T, dispose: (value: T) => void): T {
    const v = this.pool.get(key, create, dispose);
    this.keys.push(key);
    return v;
  }

  releaseAll(): void {
    for (const k of this.keys) this.pool.release(k);
    this.keys.length = 0;
  }
}
