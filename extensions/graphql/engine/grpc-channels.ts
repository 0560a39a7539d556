// gRPC channels for the `grpc` resolvers (grpc.ts): one channel per endpoint of an upstream, kept per
// upstream (endpoints + TLS) and shared by the engines of a process, reference-counted and closed a while
// after the last engine using them is closed, as the REST pools are (upstream.ts).

import * as grpc from '@grpc/grpc-js';
import type { ResolverUpstream } from '../../../common/graphql-config.js';
import { poolKey } from './upstream.js';

/** A channel no engine uses any more is closed after this long (a successor engine takes it over warm). */
const LINGER_MS = 30_000;

let nextSetId = 0;

/** One channel per endpoint of an upstream; calls go round-robin. */
export class GrpcChannelSet {
  /** short and unique in the process, for per-request memo keys (the key holds TLS material) */
  readonly id = `g${nextSetId++}`;
  refs = 0;
  lingerTimer: NodeJS.Timeout | undefined;
  private next = 0;
  private readonly clients: grpc.Client[];

  constructor(
    readonly key: string,
    readonly upstream: ResolverUpstream,
  ) {
    const tls = upstream.tls;
    const credentials =
      tls === undefined
        ? grpc.credentials.createInsecure()
        : grpc.credentials.createSsl(
            tls.rootCa !== undefined ? Buffer.from(tls.rootCa) : null,
            tls.privateKey !== undefined ? Buffer.from(tls.privateKey) : null,
            tls.certChain !== undefined ? Buffer.from(tls.certChain) : null,
          );
    const options: grpc.ChannelOptions = tls?.sni !== undefined ? { 'grpc.ssl_target_name_override': tls.sni } : {};
    this.clients = upstream.endpoints.map(
      (e) => new grpc.Client(`${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}`, credentials, options),
    );
  }

  pick(): grpc.Client | undefined {
    if (this.clients.length === 0) return undefined;
    const c = this.clients[this.next % this.clients.length];
    this.next = (this.next + 1) % this.clients.length;
    return c;
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/** Channel sets by upstream, shared by the engines of one process. */
export class GrpcChannels {
  private readonly sets = new Map<string, GrpcChannelSet>();

  acquire(upstream: ResolverUpstream): GrpcChannelSet {
    const key = poolKey(upstream);
    let set = this.sets.get(key);
    if (set === undefined) {
      set = new GrpcChannelSet(key, upstream);
      this.sets.set(key, set);
    }
    if (set.lingerTimer !== undefined) {
      clearTimeout(set.lingerTimer);
      set.lingerTimer = undefined;
    }
    set.refs++;
    return set;
  }

  release(set: GrpcChannelSet): void {
    if (--set.refs > 0) return;
    set.lingerTimer = setTimeout(() => {
      if (set.refs > 0) return;
      this.sets.delete(set.key);
      set.close();
    }, LINGER_MS);
    set.lingerTimer.unref();
  }

  get size(): number {
    return this.sets.size;
  }

  /** Closes every channel now (process shutdown, tests). */
  close(): void {
    for (const set of this.sets.values()) {
      if (set.lingerTimer !== undefined) clearTimeout(set.lingerTimer);
      set.close();
    }
    this.sets.clear();
  }
}

export const defaultGrpcChannels = new GrpcChannels();
