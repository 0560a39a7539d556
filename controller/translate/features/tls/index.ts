// TLS termination: a VirtualService's sslConfig (secretRef or sslFiles, sniDomains) -> a certificate on
// the ssl gateway's listener, one filter chain per certificate chosen by SNI, TLS 1.2 at least.
// Certificates from Secrets are served over SDS (ADS) under the Secret's name: a rotated certificate
// changes that SDS resource only, so the listener and its open connections stay (new handshakes get the
// new certificate). sslFiles are read from disk by Envoy, inline in the listener.
import type { VirtualService } from '../../../api/resources.js';
import { typed, type CommonTlsContext, type FilterChain, type NetworkFilter, type TlsSecret } from '../../../../envoy/typed.js';
import { dataSource } from '../../envoy-json.js';
import type { Feature, Problem, ResolveContext } from '../../feature.js';
import type { DownstreamTlsIR, ListenerIR } from '../../ir.js';
import { nsName, tlsFilterChainName } from '../../names.js';
import { checkTlsMaterial, tlsMaterialFromSecret } from '../../secrets.js';

export const tlsFeature: Feature = {
  name: 'tls',
  kinds: [],
  resolve(ctx) {
    return {
      bindVirtualHost(vs, ir, sink) {
        const tls = vs.spec.sslConfig ? downstreamTls(vs, ctx, sink.problems) : undefined;
        if (tls) ir.tls = tls;
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
        for (const vh of l.virtualHosts) {
          const tls = vh.tls;
          if (tls?.sdsName === undefined || secrets.has(tls.sdsName)) continue;
          secrets.set(tls.sdsName, {
            name: tls.sdsName,
            tls_certificate: { certificate_chain: dataSource(tls.certChain), private_key: dataSource(tls.privateKey) },
          });
        }
      }
      return [...secrets.values()];
    },
  },
};

/** Downstream TLS below 1.2 is refused (Envoy's default for servers too, stated so it stays). */
const TLS_PARAMS = { tls_minimum_protocol_version: 'TLSv1_2' } as const;

function downstreamTls(vs: VirtualService, ctx: ResolveContext, problems: Problem[]): DownstreamTlsIR | undefined {
  const ssl = vs.spec.sslConfig;
  if (!ssl) return undefined;
  const sniDomains = ssl.sniDomains ?? [];
  if (ssl.sslFiles) return { certChain: { filename: ssl.sslFiles.tlsCert }, privateKey: { filename: ssl.sslFiles.tlsKey }, sniDomains };
  if (!ssl.secretRef) return undefined;
  const secretNs = ssl.secretRef.namespace ?? vs.metadata.namespace;
  const secret = ctx.index.secrets.get(nsName(secretNs, ssl.secretRef.name));
  if (!secret) {
    problems.push({ code: 'SecretNotFound', message: `sslConfig.secretRef: Secret ${secretNs}.${ssl.secretRef.name} not found` });
    return undefined;
  }
  const material = tlsMaterialFromSecret(secret);
  const where = `sslConfig.secretRef (Secret ${secretNs}.${ssl.secretRef.name})`;
  const found = checkTlsMaterial(material, where);
  if (!material.certChain || !material.privateKey) found.unshift(`${where}: needs tls.crt and tls.key`);
  for (const message of [...new Set(found)]) problems.push({ code: 'InvalidTls', message });
  if (found.length || !material.certChain || !material.privateKey) return undefined;
  return {
    certChain: { inline: material.certChain },
    privateKey: { inline: material.privateKey },
    sniDomains,
    sdsName: `${secretNs}.${ssl.secretRef.name}`,
  };
}

function tlsFilterChains(listener: ListenerIR, filters: NetworkFilter[]): FilterChain[] {
  const chains = new Map<string, FilterChain>();
  for (const vh of listener.virtualHosts) {
    if (!vh.tls) continue;
    const serverNames = [...new Set(vh.tls.sniDomains)].sort();
    const sdsName = vh.tls.sdsName;
    const key = JSON.stringify([serverNames, sdsName ?? [vh.tls.certChain, vh.tls.privateKey]]);
    if (chains.has(key)) continue;
    const common: CommonTlsContext = { tls_params: TLS_PARAMS, alpn_protocols: ['h2', 'http/1.1'] };
    if (sdsName !== undefined)
      common.tls_certificate_sds_secret_configs = [{ name: sdsName, sds_config: { ads: {}, resource_api_version: 'V3' } }];
    else common.tls_certificates = [{ certificate_chain: dataSource(vh.tls.certChain), private_key: dataSource(vh.tls.privateKey) }];
    const chain: FilterChain = {
      name: tlsFilterChainName(vh.name),
      filters,
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', {
          common_tls_context: common,
        }),
      },
    };
    if (serverNames.length) chain.filter_chain_match = { server_names: serverNames };
    chains.set(key, chain);
  }
  return [...chains.values()];
}
