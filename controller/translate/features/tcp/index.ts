// A Gateway's `tcpGateway` (and a hybridGateway's TCP matched gateways): one filter chain per tcpHost with Envoy's
// tcp_proxy to the host's destination (an Upstream or kube Service, weighted destinations, an UpstreamGroup, or the
// cluster the TLS SNI name names through sni_cluster), as Gloo's tcp plugin renders it. A host's sslConfig
// picks connections by SNI (filter_chain_match.server_names, read by tls_inspector); with a certificate the chain
// terminates TLS, without one the TLS bytes pass through to the destination. TcpListenerOptions: tcpProxySettings
// (maxConnectAttempts, idleTimeout, tunnelingConfig, accessLogFlushInterval), connectionLimit and localRatelimit
// (Envoy's network filters, in front of tcp_proxy).
import type { Gateway } from '../../../api/resources.js';
import type { Destination } from '../../../api/routes.js';
import type { TcpGateway } from '../../../api/schemas.js';
import { typed, type FilterChain, type Listener, type NetworkFilter, type TcpProxy, type TlsSecret } from '../../../../envoy/typed.js';
import { destinationCluster } from '../../destinations.js';
import { downstreamTls, downstreamTlsContext, sdsSecretsOf } from '../../downstream-tls.js';
import { parseDuration } from '../../duration.js';
import { duration } from '../../envoy-json.js';
import type { BindSink, Feature, ResolveContext } from '../../feature.js';
import type { ChainMatchIR, TcpActionIR, TcpHostIR, TcpListenerIR } from '../../ir.js';
import { nsName } from '../../names.js';

const TCP_PROXY = 'envoy.filters.network.tcp_proxy';
const TLS_INSPECTOR = 'envoy.filters.listener.tls_inspector';
/** Gloo's stat prefix of a TCP listener's filters. */
const STAT_PREFIX = 'tcp';

export const tcpFeature: Feature = {
  name: 'tcp',
  kinds: [],
  resolve(ctx) {
    return {
      bindGateway(gw, ir, sink) {
        const tcp = gw.spec.tcpGateway;
        if (tcp) ir.tcp = bindTcpGateway(gw, tcp, ctx, sink);
      },
    };
  },
  render: {
    patchListener(ir, listener) {
      if (!ir.tcp) return;
      renderTcpListener(ir.tcp, ir.chain, listener);
    },
    secrets(proxy) {
      const secrets = new Map<string, TlsSecret>();
      for (const l of proxy.listeners) {
        if (!l.tcp) continue;
        for (const host of l.tcp.hosts) if (host.tls) sdsSecretsOf(host.tls, secrets);
        // a hybridGateway matcher's certificate, for hosts without their own
        if (l.chain?.tls && l.tcp.hosts.some((h) => !h.tls)) sdsSecretsOf(l.chain.tls, secrets);
      }
      return [...secrets.values()];
    },
  },
};

// ---- stage 1 ----

function bindTcpGateway(gw: Gateway, tcp: TcpGateway, ctx: ResolveContext, sink: BindSink): TcpListenerIR {
  const ns = gw.metadata.namespace;
  const ir: TcpListenerIR = { hosts: [] };
  const hosts = tcp.tcpHosts ?? [];
  if (!hosts.length) {
    sink.warnings.push({ code: 'InvalidSpec', message: 'spec.tcpGateway.tcpHosts: none: this listener accepts no connections' });
  }
  const names = new Map<string, number>();
  const matches = new Map<string, number>();
  for (const [i, host] of hosts.entries()) {
    const where = `spec.tcpGateway.tcpHosts[${i}]`;
    const sameName = names.get(host.name);
    if (sameName !== undefined) {
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.name: "${host.name}" is also tcpHosts[${sameName}]'s; names must be unique`,
      });
    }
    names.set(host.name, i);
    const one: TcpHostIR = {
      name: host.name,
      serverNames: [...new Set(host.sslConfig?.sniDomains ?? [])].sort(),
      action: { sniCluster: true },
    };
    const ssl = host.sslConfig;
    if (ssl) {
      const bad = sink.problems.length;
      const tls = downstreamTls(ssl, ns, ctx, sink.problems, `${where}.sslConfig`);
      if (tls) one.tls = tls;
      else if (sink.problems.length === bad) passthroughOnly(ssl, `${where}.sslConfig`, sink);
    }
    const action = bindAction(host.destination, `${where}.destination`, ns, ctx, sink);
    if (action) one.action = action;
    // Envoy refuses two filter chains that match the same connections
    const key = JSON.stringify(one.serverNames);
    const other = matches.get(key);
    if (other !== undefined) {
      const sni = one.serverNames.length ? `SNI [${one.serverNames.join(', ')}]` : 'every connection (no sslConfig.sniDomains)';
      sink.problems.push({ code: 'DomainConflict', message: `${where}: tcpHosts[${other}] already matches ${sni}` });
    }
    matches.set(key, i);
    ir.hosts.push(one);
  }
  for (const [i, log] of (gw.spec.options?.accessLoggingService?.accessLog ?? []).entries()) {
    if (!log.grpcService) continue;
    const message =
      `spec.options.accessLoggingService.accessLog[${i}].grpcService: Legate's gRPC access log is HTTP's ` +
      "(HttpGrpcAccessLogConfig); a tcpGateway's connections are logged by its file sinks only";
    sink.warnings.push({ code: 'NotSupported', message });
  }
  const o = tcp.options;
  const p = o?.tcpProxySettings;
  if (p?.maxConnectAttempts !== undefined) ir.maxConnectAttempts = p.maxConnectAttempts;
  if (p?.idleTimeout !== undefined) ir.idleTimeout = parseDuration(p.idleTimeout);
  if (p?.tunnelingConfig) {
    ir.tunneling = {
      hostname: p.tunnelingConfig.hostname,
      headersToAdd: (p.tunnelingConfig.headersToAdd ?? []).map((h) => ({
        key: h.header.key,
        value: h.header.value,
        append: h.append ?? true,
      })),
    };
  }
  if (p?.accessLogFlushInterval !== undefined) {
    const flush = parseDuration(p.accessLogFlushInterval);
    if (flush.seconds === 0 && (flush.nanos ?? 0) < 1_000_000) {
      const message = 'spec.tcpGateway.options.tcpProxySettings.accessLogFlushInterval: access log flush interval must have minimum of 1ms';
      sink.problems.push({ code: 'InvalidSpec', message });
    }
    ir.accessLogFlushInterval = flush;
  }
  if (o?.connectionLimit) {
    const c = o.connectionLimit;
    ir.connectionLimit = { maxActiveConnections: c.maxActiveConnections };
    if (c.delayBeforeClose !== undefined) ir.connectionLimit.delayBeforeClose = parseDuration(c.delayBeforeClose);
  }
  if (o?.localRatelimit) {
    const r = o.localRatelimit;
    // Gloo's default refill is the bucket's size
    ir.localRatelimit = {
      maxTokens: r.maxTokens,
      tokensPerFill: r.tokensPerFill ?? r.maxTokens,
      fillInterval: parseDuration(r.fillInterval),
    };
  }
  return ir;
}

/** Without a certificate the connection passes through: TLS settings would have nothing to act on. */
function passthroughOnly(ssl: NonNullable<NonNullable<TcpGateway['tcpHosts']>[number]['sslConfig']>, where: string, sink: BindSink): void {
  const { sniDomains: _sni, secretRef: _ref, sslFiles: _files, sds: _sds, ...rest } = ssl;
  const set = Object.entries(rest)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k]) => k);
  if (!set.length) return;
  const message =
    `${where}: ${set.join(', ')} ${set.length > 1 ? 'need' : 'needs'} a certificate (secretRef or sslFiles) to terminate TLS with; ` +
    'without one the connection passes through by its SNI name only';
  sink.problems.push({ code: 'InvalidTls', message });
}

function bindAction(
  dest: NonNullable<TcpGateway['tcpHosts']>[number]['destination'],
  where: string,
  ns: string,
  ctx: ResolveContext,
  sink: BindSink,
): TcpActionIR | undefined {
  if (dest.forwardSniClusterName) return { sniCluster: true };
  if (dest.single) {
    const one = cluster(dest.single, `${where}.single`, ns, ctx, sink);
    return { cluster: one.cluster, ...(one.subset ? { subset: one.subset } : {}) };
  }
  let weighted: { destination: Destination; weight?: number | undefined }[];
  let at: string;
  let groupNs = ns;
  if (dest.multi) {
    weighted = dest.multi.destinations;
    at = `${where}.multi.destinations`;
  } else if (dest.upstreamGroup) {
    const ref = dest.upstreamGroup;
    groupNs = ref.namespace ?? ns;
    const group = ctx.ofKind('UpstreamGroup').find((g) => nsName(g.metadata.namespace, g.metadata.name) === nsName(groupNs, ref.name));
    if (!group) {
      sink.warnings.push({
        code: 'UpstreamGroupNotFound',
        message: `${where}.upstreamGroup: UpstreamGroup ${groupNs}.${ref.name} not found`,
      });
      return { cluster: `invalid:upstreamgroup:${groupNs}.${ref.name}` };
    }
    weighted = group.spec.destinations;
    at = `${where}.upstreamGroup (UpstreamGroup ${groupNs}.${ref.name}) destinations`;
  } else {
    return undefined;
  }
  return {
    weighted: weighted.map((d, j) => {
      const one = cluster(d.destination, `${at}[${j}].destination`, groupNs, ctx, sink);
      return { cluster: one.cluster, weight: d.weight ?? 0, ...(one.subset ? { subset: one.subset } : {}) };
    }),
  };
}

/** A destination's cluster; a missing or rejected one is a warning (the connection then fails, as a route's would). */
function cluster(
  d: Destination,
  where: string,
  ns: string,
  ctx: ResolveContext,
  sink: BindSink,
): { cluster: string; subset?: Record<string, string> } {
  const found = destinationCluster(d, where, ns, ctx);
  if (found.problem) sink.warnings.push({ code: found.problem.code, message: `${found.problem.message}: its connections are closed` });
  if (d.destinationSpec) {
    const message = `${where}.destinationSpec: function routing is HTTP; tcp_proxy forwards bytes`;
    sink.problems.push({ code: 'NotSupported', message });
  }
  return { cluster: found.cluster, ...(d.subset ? { subset: d.subset.values } : {}) };
}

// ---- stage 2 ----

const metadataMatch = (subset: Record<string, string>) => ({ filter_metadata: { 'envoy.lb': subset } });

function tcpProxy(tcp: TcpListenerIR, host: TcpHostIR): NetworkFilter {
  const a = host.action;
  const config: TcpProxy = { stat_prefix: STAT_PREFIX };
  if ('sniCluster' in a) {
    // sni_cluster sets the cluster from the SNI name before tcp_proxy connects
    config.cluster = '';
  } else if ('weighted' in a) {
    config.weighted_clusters = {
      clusters: a.weighted.map((w) => ({
        name: w.cluster,
        weight: w.weight,
        ...(w.subset ? { metadata_match: metadataMatch(w.subset) } : {}),
      })),
    };
  } else {
    config.cluster = a.cluster;
    if (a.subset) config.metadata_match = metadataMatch(a.subset);
  }
  if (tcp.idleTimeout) config.idle_timeout = duration(tcp.idleTimeout);
  if (tcp.maxConnectAttempts !== undefined) config.max_connect_attempts = tcp.maxConnectAttempts;
  if (tcp.tunneling) {
    config.tunneling_config = {
      hostname: tcp.tunneling.hostname,
      ...(tcp.tunneling.headersToAdd.length
        ? {
            headers_to_add: tcp.tunneling.headersToAdd.map((h) => ({
              header: { key: h.key, value: h.value },
              append_action: h.append ? 'APPEND_IF_EXISTS_OR_ADD' : 'OVERWRITE_IF_EXISTS_OR_ADD',
            })),
          }
        : {}),
    };
  }
  if (tcp.accessLogFlushInterval) config.access_log_options = { access_log_flush_interval: duration(tcp.accessLogFlushInterval) };
  return { name: TCP_PROXY, typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', config) };
}

function renderTcpListener(tcp: TcpListenerIR, chain: ChainMatchIR | undefined, listener: Listener): void {
  const front: NetworkFilter[] = [];
  if (tcp.connectionLimit) {
    const c = tcp.connectionLimit;
    front.push({
      name: 'envoy.filters.network.connection_limit',
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit', {
        stat_prefix: STAT_PREFIX,
        max_connections: c.maxActiveConnections,
        ...(c.delayBeforeClose ? { delay: duration(c.delayBeforeClose) } : {}),
      }),
    });
  }
  if (tcp.localRatelimit) {
    const r = tcp.localRatelimit;
    front.push({
      name: 'envoy.filters.network.local_ratelimit',
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit', {
        stat_prefix: STAT_PREFIX,
        // one bucket for the listener's filter chains
        share_key: listener.name ?? '',
        token_bucket: { max_tokens: r.maxTokens, tokens_per_fill: r.tokensPerFill, fill_interval: duration(r.fillInterval) },
      }),
    });
  }
  const chains: FilterChain[] = tcp.hosts.map((host) => {
    const filters: NetworkFilter[] = [...front];
    if ('sniCluster' in host.action) {
      filters.push({
        name: 'envoy.filters.network.sni_cluster',
        typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.sni_cluster.v3.SniCluster', {}),
      });
    }
    filters.push(tcpProxy(tcp, host));
    const fc: FilterChain = { name: host.name };
    // a host without SNI names or certificate of its own takes its matcher's (hybridGateway)
    const serverNames = host.serverNames.length ? host.serverNames : (chain?.serverNames ?? []);
    if (serverNames.length) fc.filter_chain_match = { server_names: serverNames };
    fc.filters = filters;
    const tls = host.tls ?? chain?.tls;
    if (tls) {
      fc.transport_socket = {
        name: 'envoy.transport_sockets.tls',
        typed_config: typed(
          'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
          downstreamTlsContext(tls),
        ),
      };
      if (tls.transportSocketConnectTimeout) fc.transport_socket_connect_timeout = tls.transportSocketConnectTimeout;
    }
    return fc;
  });
  // SNI names (and sni_cluster) are read from the ClientHello by tls_inspector
  const sni =
    chains.some((c) => c.filter_chain_match?.server_names?.length || c.transport_socket) || tcp.hosts.some((h) => 'sniCluster' in h.action);
  delete listener.filter_chains;
  if (sni && !listener.listener_filters?.some((f) => f.name === TLS_INSPECTOR)) {
    const inspector = {
      name: TLS_INSPECTOR,
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector', {}),
    };
    listener.listener_filters = [...(listener.listener_filters ?? []), inspector];
  }
  listener.filter_chains = chains;
}
