// TLS termination: a VirtualService's sslConfig -> a filter chain on the ssl gateway's listener, chosen by
// SNI, as Gloo renders it (projects/gloo/pkg/utils/ssl.go): the certificate, client certificates verified
// against a CA (the Secret's ca.crt or sslFiles.rootCa) and required unless oneWayTls, verifySubjectAltName,
// TLS parameters (TLS 1.2 at least unless set lower, as Gloo allows), ALPN (h2, http/1.1 unless set), OCSP
// stapling, session resumption and the handshake timeout.
// Material from Secrets is served over SDS (ADS): the certificate under the Secret's `<namespace>.<name>`,
// its CA under `<namespace>.<name>#ca`. A rotated certificate or CA changes those SDS resources only, so the
// listener and its open connections stay (new handshakes get the new material). sslFiles are read from disk
// by Envoy, inline in the listener.
import { isIP } from 'node:net';
import type { VirtualService } from '../../../api/resources.js';
import {
  typed,
  type CommonTlsContext,
  type DataSource,
  type FilterChain,
  type NetworkFilter,
  type TlsSecret,
  type envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext as ValidationContext,
  type envoy_extensions_transport_sockets_tls_v3_DownstreamTlsContext as DownstreamTlsContext,
  type envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher as SanMatcher,
} from '../../../../envoy/typed.js';
import { parseDuration } from '../../duration.js';
import { dataSource } from '../../envoy-json.js';
import type { Feature, Problem, ResolveContext } from '../../feature.js';
import type { DownstreamTlsIR, ListenerIR } from '../../ir.js';
import { nsName, tlsFilterChainName } from '../../names.js';
import { checkTlsMaterial, tlsMaterialFromSecret } from '../../secrets.js';
import { DEFAULT_MIN_TLS, OCSP_STAPLE_POLICIES, tlsVersion, type SslConfig } from './schema.js';

export interface TlsDefaults {
  /** Settings gateway.virtualServiceOptions.oneWayTls: a VirtualService without its own oneWayTls takes this */
  oneWayTls?: boolean;
}

export const tlsFeature = (defaults: TlsDefaults = {}): Feature => ({
  name: 'tls',
  kinds: [],
  resolve(ctx) {
    return {
      bindVirtualHost(vs, ir, sink) {
        const tls = vs.spec.sslConfig ? downstreamTls(vs, ctx, defaults, sink.problems) : undefined;
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
          if (tls?.sdsName === undefined) continue;
          if (!secrets.has(tls.sdsName)) {
            const certificate: TlsSecret['tls_certificate'] = {
              certificate_chain: dataSource(tls.certChain),
              private_key: dataSource(tls.privateKey),
            };
            if (tls.ocspStaple) certificate.ocsp_staple = ocspSource(tls.ocspStaple);
            secrets.set(tls.sdsName, { name: tls.sdsName, tls_certificate: certificate });
          }
          const caName = caSdsName(tls.sdsName);
          if (tls.clientCa && !secrets.has(caName)) {
            secrets.set(caName, { name: caName, validation_context: { trusted_ca: dataSource(tls.clientCa) } });
          }
        }
      }
      return [...secrets.values()];
    },
  },
});

const caSdsName = (sdsName: string): string => `${sdsName}#ca`;
const ADS = { ads: {}, resource_api_version: 'V3' } as const;
/** Gloo's default when alpnProtocols is unset; ["allow_empty"] is its way of saying "no ALPN". */
const DEFAULT_ALPN = ['h2', 'http/1.1'];
const ALLOW_EMPTY = 'allow_empty';

function ocspSource(staple: NonNullable<DownstreamTlsIR['ocspStaple']>): DataSource {
  return 'inlineBytes' in staple ? { inline_bytes: staple.inlineBytes } : dataSource(staple);
}

function downstreamTls(vs: VirtualService, ctx: ResolveContext, defaults: TlsDefaults, problems: Problem[]): DownstreamTlsIR | undefined {
  const ssl = vs.spec.sslConfig;
  if (!ssl) return undefined;
  const sniDomains = ssl.sniDomains ?? [];
  let tls: DownstreamTlsIR;
  if (ssl.sslFiles) {
    const files = ssl.sslFiles;
    tls = { certChain: { filename: files.tlsCert }, privateKey: { filename: files.tlsKey }, sniDomains };
    if (files.rootCa !== undefined) tls.clientCa = { filename: files.rootCa };
    if (files.ocspStaple !== undefined) tls.ocspStaple = { filename: files.ocspStaple };
  } else if (ssl.secretRef) {
    const fromSecret = secretTls(vs, ssl.secretRef, sniDomains, ctx, problems);
    if (!fromSecret) return undefined;
    tls = fromSecret;
  } else {
    return undefined;
  }
  return withOptions(tls, ssl, defaults, problems);
}

/** The certificate, CA and OCSP staple of the Secret sslConfig.secretRef names. */
function secretTls(
  vs: VirtualService,
  ref: NonNullable<SslConfig['secretRef']>,
  sniDomains: string[],
  ctx: ResolveContext,
  problems: Problem[],
): DownstreamTlsIR | undefined {
  const secretNs = ref.namespace ?? vs.metadata.namespace;
  const secret = ctx.index.secrets.get(nsName(secretNs, ref.name));
  if (!secret) {
    problems.push({ code: 'SecretNotFound', message: `sslConfig.secretRef: Secret ${secretNs}.${ref.name} not found` });
    return undefined;
  }
  const material = tlsMaterialFromSecret(secret);
  const where = `sslConfig.secretRef (Secret ${secretNs}.${ref.name})`;
  const found = checkTlsMaterial(material, where);
  if (!material.certChain || !material.privateKey) found.unshift(`${where}: needs tls.crt and tls.key`);
  // Gloo's key for a stapled OCSP response (DER); stringData cannot hold binary, so only data
  const staple = secret.spec.data?.['tls.ocsp-staple'];
  if (staple !== undefined && !isOcspResponse(Buffer.from(staple, 'base64')))
    found.push(`${where}: tls.ocsp-staple is not a successful DER-encoded OCSP response`);
  for (const message of [...new Set(found)]) problems.push({ code: 'InvalidTls', message });
  if (found.length || !material.certChain || !material.privateKey) return undefined;
  const tls: DownstreamTlsIR = {
    certChain: { inline: material.certChain },
    privateKey: { inline: material.privateKey },
    sniDomains,
    sdsName: `${secretNs}.${ref.name}`,
  };
  if (material.rootCa !== undefined) tls.clientCa = { inline: material.rootCa };
  if (staple !== undefined) tls.ocspStaple = { inlineBytes: staple };
  return tls;
}

/** What sslConfig says besides the material: client certificates, parameters, ALPN, OCSP, resumption, timeout. */
function withOptions(tls: DownstreamTlsIR, ssl: SslConfig, defaults: TlsDefaults, problems: Problem[]): DownstreamTlsIR | undefined {
  const bad = problems.length;
  // as Gloo: a CA means client certificates are verified, and required unless oneWayTls (the VirtualService's, else the Settings')
  if (tls.clientCa) tls.requireClientCertificate = (ssl.oneWayTls ?? defaults.oneWayTls) !== true;
  if (ssl.verifySubjectAltName?.length) {
    if (!tls.clientCa) {
      problems.push({
        code: 'InvalidTls',
        message: 'sslConfig.verifySubjectAltName: needs a CA to verify client certificates with (ca.crt in the Secret, or sslFiles.rootCa)',
      });
    }
    tls.verifySubjectAltName = [...new Set(ssl.verifySubjectAltName)];
  }
  const p = ssl.parameters;
  if (p) {
    const min = tlsVersion(p.minimumProtocolVersion);
    const max = tlsVersion(p.maximumProtocolVersion);
    // TLS_AUTO or unset keeps Legate's floor (Envoy's server default); a lower minimum is the user's choice, as in Gloo
    tls.params = { minimum: min === undefined || min === 'TLS_AUTO' ? DEFAULT_MIN_TLS : min };
    if (max !== undefined && max !== 'TLS_AUTO') tls.params.maximum = max;
    if (p.cipherSuites?.length) tls.params.cipherSuites = p.cipherSuites;
    if (p.ecdhCurves?.length) tls.params.ecdhCurves = p.ecdhCurves;
  }
  const alpn = ssl.alpnProtocols;
  if (alpn?.length) {
    if (alpn.includes(ALLOW_EMPTY) && alpn.length > 1) {
      problems.push({ code: 'InvalidTls', message: `sslConfig.alpnProtocols: "${ALLOW_EMPTY}" means no ALPN and stands alone` });
    }
    tls.alpnProtocols = alpn[0] === ALLOW_EMPTY ? [] : [...alpn];
  }
  if (ssl.ocspStaplePolicy !== undefined) {
    const policy = typeof ssl.ocspStaplePolicy === 'number' ? OCSP_STAPLE_POLICIES[ssl.ocspStaplePolicy]! : ssl.ocspStaplePolicy;
    if (policy === 'MUST_STAPLE' && !tls.ocspStaple) {
      problems.push({
        code: 'InvalidTls',
        message: 'sslConfig.ocspStaplePolicy: MUST_STAPLE needs an OCSP response (tls.ocsp-staple in the Secret, or sslFiles.ocspStaple)',
      });
    }
    if (policy !== 'LENIENT_STAPLING') tls.ocspStaplePolicy = policy;
  }
  if (ssl.disableTlsSessionResumption === true) tls.disableSessionResumption = true;
  if (ssl.transportSocketConnectTimeout !== undefined) {
    const timeout = parseDuration(ssl.transportSocketConnectTimeout);
    if (timeout.seconds || timeout.nanos) tls.transportSocketConnectTimeout = timeout;
  }
  return problems.length > bad ? undefined : tls;
}

/**
 * A minimal DER check of an OCSP response (RFC 6960): a SEQUENCE of responseStatus successful(0) and
 * responseBytes of type id-pkix-ocsp-basic. Envoy refuses anything else, which would fail the listener.
 */
export function isOcspResponse(der: Buffer): boolean {
  const outer = derHeader(der, 0);
  if (!outer || der[0] !== 0x30 || outer.end !== der.length) return false;
  const status = derHeader(der, outer.start);
  if (!status || der[outer.start] !== 0x0a || status.end - status.start !== 1 || der[status.start] !== 0) return false;
  if (der[status.end] !== 0xa0) return false;
  const basic = Buffer.from([0x06, 0x09, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01]);
  return der.subarray(status.end, status.end + 32).includes(basic);
}

/** The content bounds of the DER element at `at` (definite lengths only, as DER has). */
function derHeader(der: Buffer, at: number): { start: number; end: number } | undefined {
  const first = der[at + 1];
  if (first === undefined) return undefined;
  if (first < 0x80) return { start: at + 2, end: at + 2 + first };
  const n = first & 0x7f;
  if (n === 0 || n > 4 || at + 2 + n > der.length) return undefined;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + der[at + 2 + i]!;
  return { start: at + 2 + n, end: at + 2 + n + len };
}

/** Gloo's verifySubjectAltName matches a SAN of any type: one typed matcher per type it can be. */
function sanMatchers(names: readonly string[]): SanMatcher[] {
  return names.flatMap((san) => {
    const types: SanMatcher['san_type'][] = isIP(san) ? ['IP_ADDRESS'] : ['DNS', 'URI', 'EMAIL'];
    return types.map((t) => ({ san_type: t, matcher: { exact: san } }));
  });
}

function commonTlsContext(tls: DownstreamTlsIR): CommonTlsContext {
  const p = tls.params;
  const params: NonNullable<CommonTlsContext['tls_params']> = { tls_minimum_protocol_version: p?.minimum ?? DEFAULT_MIN_TLS };
  if (p?.maximum) params.tls_maximum_protocol_version = p.maximum;
  if (p?.cipherSuites) params.cipher_suites = p.cipherSuites;
  if (p?.ecdhCurves) params.ecdh_curves = p.ecdhCurves;
  const common: CommonTlsContext = { tls_params: params };
  const alpn = tls.alpnProtocols ?? DEFAULT_ALPN;
  if (alpn.length) common.alpn_protocols = alpn;
  if (tls.sdsName !== undefined) {
    common.tls_certificate_sds_secret_configs = [{ name: tls.sdsName, sds_config: ADS }];
  } else {
    const certificate: NonNullable<CommonTlsContext['tls_certificates']>[number] = {
      certificate_chain: dataSource(tls.certChain),
      private_key: dataSource(tls.privateKey),
    };
    if (tls.ocspStaple) certificate.ocsp_staple = ocspSource(tls.ocspStaple);
    common.tls_certificates = [certificate];
  }
  if (tls.clientCa) {
    const sans = tls.verifySubjectAltName?.length ? sanMatchers(tls.verifySubjectAltName) : undefined;
    if (tls.sdsName !== undefined) {
      const sds = { name: caSdsName(tls.sdsName), sds_config: ADS };
      if (sans) {
        common.combined_validation_context = {
          default_validation_context: { match_typed_subject_alt_names: sans },
          validation_context_sds_secret_config: sds,
        };
      } else {
        common.validation_context_sds_secret_config = sds;
      }
    } else {
      const validation: ValidationContext = { trusted_ca: dataSource(tls.clientCa) };
      if (sans) validation.match_typed_subject_alt_names = sans;
      common.validation_context = validation;
    }
  }
  return common;
}

function tlsFilterChains(listener: ListenerIR, filters: NetworkFilter[]): FilterChain[] {
  const chains = new Map<string, FilterChain>();
  for (const vh of listener.virtualHosts) {
    if (!vh.tls) continue;
    const serverNames = [...new Set(vh.tls.sniDomains)].sort();
    // the CA's content is in the SDS resource, not the chain: leave it out of the key with the certificate
    const { certChain, privateKey, clientCa, sniDomains: _sni, ...rest } = vh.tls;
    const key = JSON.stringify([serverNames, rest, rest.sdsName ?? [certChain, privateKey, clientCa]]);
    if (chains.has(key)) continue;
    const context: DownstreamTlsContext = { common_tls_context: commonTlsContext(vh.tls) };
    if (vh.tls.clientCa) context.require_client_certificate = vh.tls.requireClientCertificate ?? true;
    if (vh.tls.ocspStaplePolicy) context.ocsp_staple_policy = vh.tls.ocspStaplePolicy;
    if (vh.tls.disableSessionResumption) context.disable_stateless_session_resumption = true;
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
