// Prometheus metrics of the controller: resources by state, xDS entities served, proxies connected
// and in sync, ACK/NACK counters, translation time; the same under Gloo's names. Read by `legatectl check` ("xds metrics").
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
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
  const gloo = glooMetrics(registry, src);
  return {
    translation: {
      observe(seconds: number): void {
        translation.observe(seconds);
        gloo.syncTime.observe({ syncer_name: GLOO_SYNCER }, seconds);
        gloo.snapOut.inc();
      },
    },
    /** a new set of resources read (Gloo's emitter resources_in) */
    resourcesIn: (): void => gloo.resourcesIn.inc(),
    configStatus: configStatusMetrics(registry),
  };
}

/** Gloo's name for the syncer that translates the API snapshot. */
const GLOO_SYNCER = 'gloosnapshot.ApiSyncers';

/**
 * The control-plane metrics under the names Gloo Edge publishes them, for the alerts and dashboards users have:
 * the xDS state of each Envoy stream and type (Gloo Enterprise's glooe.solo.io/xds/*, by `resource` type URL) and
 * the API snapshot's translation (api.gloosnapshot.gloo.solo.io/sync/time_sec, emitter/*).
 */
function glooMetrics(registry: Registry, src: ControllerMetricsSources) {
  type XdsState = 'insync' | 'outofsync' | 'nack';
  const states = (): { all: Map<string, number>; by: Record<XdsState, Map<string, number>> } => {
    const all = new Map<string, number>();
    const by: Record<XdsState, Map<string, number>> = { insync: new Map(), outofsync: new Map(), nack: new Map() };
    for (const c of src.ads.connections()) {
      const snap = src.cache.get(c.role);
      for (const [typeUrl, t] of Object.entries(c.types)) {
        const current = snap?.typeSnapshot(typeUrl).version;
        const state: XdsState =
          current !== undefined && t.ackedVersion === current
            ? 'insync'
            : t.lastNack && t.lastNack.version === t.sentVersion
              ? 'nack'
              : 'outofsync';
        all.set(typeUrl, (all.get(typeUrl) ?? 0) + 1);
        by[state].set(typeUrl, (by[state].get(typeUrl) ?? 0) + 1);
      }
    }
    return { all, by };
  };
  const xdsGauge = (name: string, help: string, pick: (s: ReturnType<typeof states>) => Map<string, number>): void => {
    new Gauge({
      name,
      help,
      labelNames: ['resource'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [resource, n] of pick(states())) this.set({ resource }, n);
      },
    });
  };
  xdsGauge('glooe_solo_io_xds_total_entities', 'xDS streams by resource type (Gloo Enterprise name)', (s) => s.all);
  xdsGauge('glooe_solo_io_xds_insync', 'xDS streams whose Envoy ACKed the version served now, by resource type', (s) => s.by.insync);
  xdsGauge('glooe_solo_io_xds_outofsync', 'xDS streams not yet ACKing the version served now, by resource type', (s) => s.by.outofsync);
  xdsGauge('glooe_solo_io_xds_nack', 'xDS streams whose Envoy rejected (NACKed) the version served, by resource type', (s) => s.by.nack);
  return {
    syncTime: new Histogram({
      name: 'api_gloosnapshot_gloo_solo_io_sync_time_sec',
      help: 'The time taken for a given sync (Gloo name: translating the resources into xDS)',
      labelNames: ['syncer_name'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    resourcesIn: new Counter({
      name: 'api_gloosnapshot_gloo_solo_io_emitter_resources_in',
      help: 'The number of resource lists received on open watch channels (Gloo name: resource sets read)',
      registers: [registry],
    }),
    snapOut: new Counter({
      name: 'api_gloosnapshot_gloo_solo_io_emitter_snap_out',
      help: 'The number of snapshots updates going out (Gloo name: translations run)',
      registers: [registry],
    }),
  };
}

/** One series of a config status metric: 0 when the resource is Accepted, 1 when Rejected or Warning (as Gloo). */
export interface ConfigStatusSeries {
  /** validation_gateway_solo_io_<kind in snake case>_config_status */
  metric: string;
  labels: Record<string, string>;
  value: number;
}

/** Settings observabilityOptions.configStatusMetricLabels: gauges whose names and labels come from the Settings. */
function configStatusMetrics(registry: Registry) {
  const gauges = new Map<string, { gauge: Gauge; labelNames: string }>();
  return (series: readonly ConfigStatusSeries[]): void => {
    const wanted = new Map<string, string[]>();
    for (const s of series) wanted.set(s.metric, [...new Set([...(wanted.get(s.metric) ?? []), ...Object.keys(s.labels)])].sort());
    for (const [metric, g] of gauges) {
      if (wanted.get(metric)?.join(',') === g.labelNames) continue;
      registry.removeSingleMetric(metric);
      gauges.delete(metric);
    }
    for (const [metric, labelNames] of wanted) {
      if (gauges.has(metric)) continue;
      gauges.set(metric, {
        gauge: new Gauge({
          name: metric,
          help: 'configuration status: 0 Accepted, 1 Rejected or Warning',
          labelNames,
          registers: [registry],
        }),
        labelNames: labelNames.join(','),
      });
    }
    for (const g of gauges.values()) g.gauge.reset();
    for (const s of series) gauges.get(s.metric)?.gauge.set(s.labels, s.value);
  };
}
