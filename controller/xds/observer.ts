// What happens on the xDS server, for whoever needs to know: the controller attributes NACKs to
// resources, the admin interface counts. Observers are passed to the server (as go-control-plane's
// callbacks); an observer that throws is logged and never breaks a stream.

/** The identity of one ADS stream. */
export interface StreamIdentity {
  streamId: number;
  role: string;
  nodeId: string;
}

export interface NackEvent {
  role: string;
  nodeId: string;
  typeUrl: string;
  /** The version Envoy rejected (the one this server sent). */
  version: string;
  /** The version Envoy keeps using (version_info of the NACK); '' if it never accepted one. */
  previousVersion: string;
  message: string;
  /** google.rpc.Status code of error_detail. */
  code: number;
  /** Names of the resources in the rejected response. */
  resourceNames: string[];
}

export interface XdsObserver {
  /** A stream identified its node (its first request). */
  onStreamOpen?(stream: StreamIdentity): void;
  onStreamClose?(stream: StreamIdentity, reason: string): void;
  /** A DiscoveryResponse was written on an ADS stream. */
  onResponse?(stream: StreamIdentity, typeUrl: string, version: string, resources: number): void;
  onAck?(stream: StreamIdentity, typeUrl: string, version: string): void;
  /** Envoy rejected a response (after it is logged at warn). */
  onNack?(event: NackEvent): void;
  /** A request answering a superseded response was ignored. */
  onStaleRequest?(stream: StreamIdentity, typeUrl: string): void;
  /** A unary Fetch* call was answered. */
  onFetch?(typeUrl: string): void;
}

export interface TypeCounters {
  responses: number;
  acks: number;
  nacks: number;
}

export interface AdsCounters {
  /** DiscoveryResponses written on ADS streams. */
  responsesSent: number;
  acks: number;
  nacks: number;
  /** Streams connected now. */
  connectedStreams: number;
  /** Streams identified since construction. */
  streamsTotal: number;
  /** Requests dropped because of a stale nonce. */
  staleRequests: number;
  /** Unary Fetch* calls answered. */
  fetches: number;
  byType: Record<string, TypeCounters>;
}

/** The server's own counters, as an observer. */
export class XdsCounters implements XdsObserver {
  private readonly totals = { responsesSent: 0, acks: 0, nacks: 0, connectedStreams: 0, streamsTotal: 0, staleRequests: 0, fetches: 0 };
  private readonly byType = new Map<string, TypeCounters>();

  onStreamOpen(): void {
    this.totals.streamsTotal++;
    this.totals.connectedStreams++;
  }

  onStreamClose(): void {
    this.totals.connectedStreams--;
  }

  onResponse(_stream: StreamIdentity, typeUrl: string): void {
    this.totals.responsesSent++;
    this.of(typeUrl).responses++;
  }

  onAck(_stream: StreamIdentity, typeUrl: string): void {
    this.totals.acks++;
    this.of(typeUrl).acks++;
  }

  onNack(event: NackEvent): void {
    this.totals.nacks++;
    this.of(event.typeUrl).nacks++;
  }

  onStaleRequest(): void {
    this.totals.staleRequests++;
  }

  onFetch(): void {
    this.totals.fetches++;
  }

  /** A copy. */
  snapshot(): AdsCounters {
    const byType: Record<string, TypeCounters> = {};
    for (const [t, c] of this.byType) byType[t] = { ...c };
    return { ...this.totals, byType };
  }

  private of(typeUrl: string): TypeCounters {
    let c = this.byType.get(typeUrl);
    if (!c) {
      c = { responses: 0, acks: 0, nacks: 0 };
      this.byType.set(typeUrl, c);
    }
    return c;
  }
}

/** Calls every observer in turn; one that throws is reported through `onError` and skipped. */
export function fanOut(observers: readonly XdsObserver[], onError: (error: unknown) => void): Required<XdsObserver> {
  const each =
    <K extends keyof XdsObserver>(key: K) =>
    (...args: Parameters<NonNullable<XdsObserver[K]>>): void => {
      for (const o of observers) {
        const fn = o[key] as ((...a: typeof args) => void) | undefined;
        if (!fn) continue;
        try {
          fn.apply(o, args);
        } catch (error) {
          onError(error);
        }
      }
    };
  return {
    onStreamOpen: each('onStreamOpen'),
    onStreamClose: each('onStreamClose'),
    onResponse: each('onResponse'),
    onAck: each('onAck'),
    onNack: each('onNack'),
    onStaleRequest: each('onStaleRequest'),
    onFetch: each('onFetch'),
  };
}
