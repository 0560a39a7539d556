// TLS termination: a VirtualService's sslConfig -> a filter chain on the ssl gateway's listener, chosen by
// SNI, as Gloo renders it (projects/gloo/pkg/utils/ssl.go): the certificate, client certificates verified
// against a CA (the Secret's ca.crt or sslFiles.rootCa) and required unless oneWayTls, verifySubjectAltName,
// TLS parameters (TLS 1.2 at least unless set lower, as Gloo allows), ALPN (h2, http/1.1 unless set), OCSP
// stapling, session resumption and the handshake timeout.
// Material from Secrets is served over SDS (ADS): the certificate under the Secret's `<namespace>.<name>`,
// its CA under `<namespace>.<name>#ca`. A rotated certificate or CA changes those SDS resources only, so the
// listener and its open connections stay (new handshakes get the new material). sslFiles are read from disk
// by Envoy, inline in the listener. sslConfig.sds names secrets of the user's own SDS server, which Envoy asks
// through a cluster to its targetUri.
import {
  typed,
  type FilterChain,
  type NetworkFilter,
  type TlsSecret,
  type envoy_extensions_transport_sockets_tls_v3_DownstreamTlsContext as DownstreamTlsContext,
} from '../../../../envoy/typed.js';
import { downstreamTls, downstreamTlsContext, sdsClusters, sdsSecretsOf } from '../../downstream-tls.js';
import type { Feature } from '../../feature.js';
import type { ListenerIR } from '../../ir.js';
import { tlsFilterChainName } from '../../names.js';

export interface TlsDefaults {
  /** Settings gateway.virtualServiceOptions.oneWayTls: a VirtualService without its own oneWayTls takes this */
  oneWayTls?: boolean;
  /** Settings gateway.validation.warnMissingTlsSecret: a missing Secret is a warning; the host is served without TLS until it exists */
  warnMissingTlsSecret?: boolean;
}

export const tlsFeature = (defaults: TlsDefaults = {}): Feature => ({
  name: 'tls',
  kinds: [],
  resolve(ctx) {
    return {
      bindVirtualHost(vs, ir, sink) {
        const ssl = vs.spec.sslConfig;
        const problems = defaults.warnMissingTlsSecret ? [] : sink.problems;
        const tls = ssl ? downstreamTls(ssl, vs.metadata.namespace, ctx, problems, 'sslConfig', defaults.oneWayTls) : undefined;
        if (tls) ir.tls = tls;
        if (problems === sink.problems) return;
        for (const p of problems) {
          if (p.code !== 'SecretNotFound') sink.problems.push(p);
          else sink.warnings.push({ ...p, message: `${p.message}; no TLS for this host until it exists (Settings warnMissingTlsSecret)` });
        }
      },
    };
  },
  render: {
    patchListener(ir, listener, filters) {
      if (!ir.ssl) return;
      // re-added in this order, so the listener reads name, address, listener_filters, filter_chains
      delete listener.filter_chains;
      listener.listener_filters = [
        {
          name: 'envoy.filters.listener.tls_inspector',
          typed_config: typed('type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector', {}),
        },
      ];
      listener.filter_chains = tlsFilterChains(ir, filters);
    },
    secrets(proxy) {
      const secrets = new Map<string, TlsSecret>();
      for (const l of proxy.listeners) {
        if (!l.ssl) continue;
        for (const vh of l.virtualHosts) if (vh.tls) sdsSecretsOf(vh.tls, secrets);
      }
      return [...secrets.values()];
    },
    // sslConfig.sds: the clusters to the users' SDS servers
    extraClusters: sdsClusters,
  },
});

function tlsFilterChains(listener: ListenerIR, filters: NetworkFilter[]): FilterChain[] {
  const chains = new Map<string, FilterChain>();
  for (const vh of listener.virtualHosts) {
    if (!vh.tls) continue;
    const serverNames = [...new Set(vh.tls.sniDomains)].sort();
    // the CA's content is in the SDS resource, not the chain: leave it out of the key with the certificate
    const { certChain, privateKey, clientCa, sniDomains: _sni, ...rest } = vh.tls;
    const key = JSON.stringify([serverNames, rest, rest.sdsName ?? [certChain, privateKey, clientCa]]);
    if (chains.has(key)) continue;
    const context: DownstreamTlsContext = downstreamTlsContext(vh.tls);
    const chain: FilterChain = {
      name: tlsFilterChainName(vh.name),
      filters,
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', context),
      },
    };
    if (serverNames.length) chain.filter_chain_match = { server_names: serverNames };
    if (vh.tls.transportSocketConnectTimeout) chain.transport_socket_connect_timeout = vh.tls.transportSocketConnectTimeout;
    chains.set(key, chain);
  }
  return [...chains.values()];
}
