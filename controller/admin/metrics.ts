// Prometheus metrics of the controller: resources by state, xDS entities served, proxies connected
// and in sync, ACK/NACK counters, translation time. Read by `legatectl check` ("xds metrics").
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { SnapshotCache } from '../xds/cache.js';
import type { AdsServer } from '../xds/server.js';

export interface ControllerMetricsSources {
  cache: SnapshotCache;
  ads: AdsServer;
  /** kind -> state -> count */
  resourceStates(): Record<string, Record<string, number>>;
  /** how many problems keep the resource source from being current (0: it is) */
  sourceProblems(): number;
}

export function controllerMetrics(registry: Registry, src: ControllerMetricsSources) {
  new Gauge({
    name: 'legate_source_up',
    help: '1 when the resource source (directory, Kubernetes API) is current, 0 while it serves its last objects',
    registers: [registry],
    collect() {
      this.set(src.sourceProblems() === 0 ? 1 : 0);
    },
  });
  new Gauge({
    name: 'legate_resources',
    help: 'resources by kind and state',
    labelNames: ['kind', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, states] of Object.entries(src.resourceStates()))
        for (const [state, n] of Object.entries(states)) this.set({ kind, state }, n);
    },
  });
  new Gauge({
    name: 'legate_xds_total_entities',
    help: 'resources served per role and type',
    labelNames: ['role', 'type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const role of src.cache.roles()) {
        for (const [typeUrl, t] of src.cache.get(role)?.types ?? [])
          this.set({ role, type: typeUrl.split('.').pop() ?? typeUrl }, t.resources.length);
      }
    },
  });
  new Gauge({
    name: 'legate_xds_connected',
    help: 'xDS streams connected per role',
    labelNames: ['role'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of src.ads.connections()) this.inc({ role: c.role });
    },
  });
  new Gauge({
    name: 'legate_xds_insync',
    help: 'xDS streams per role whose every subscribed type has ACKed the version served now',
    labelNames: ['role'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of src.ads.connections()) {
        const snap = src.cache.get(c.role);
        const inSync =
          snap !== undefined && Object.entries(c.types).every(([typeUrl, t]) => t.ackedVersion === snap.typeSnapshot(typeUrl).version);
        this.inc({ role: c.role }, inSync ? 1 : 0);
      }
    },
  });
  const counter = (name: string, help: string, pick: () => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(pick());
      },
    });
  };
  counter('legate_xds_responses_total', 'DiscoveryResponses sent', () => src.ads.counters().responsesSent);
  counter('legate_xds_acks_total', 'ACKs received', () => src.ads.counters().acks);
  counter('legate_xds_nacks_total', 'NACKs received (config rejected by a client)', () => src.ads.counters().nacks);
  counter('legate_xds_streams_total', 'xDS streams accepted', () => src.ads.counters().streamsTotal);
  const translation = new Histogram({
    name: 'legate_translation_duration_seconds',
    help: 'time to translate all resources into xDS',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return { translation };
}
