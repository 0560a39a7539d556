// Downstream TLS shared by the features that terminate TLS on a filter chain (tls: VirtualService sslConfig; tcp:
// a tcpHost's): an sslConfig resolved to its certificate (Secret or files) and settings as Gloo renders them
// (projects/gloo/pkg/utils/ssl.go: a CA means client certificates are required unless oneWayTls), and the Envoy
// DownstreamTlsContext and SDS resources of it. Secrets are served over SDS under `<namespace>.<name>` (and
// `<namespace>.<name>#ca`), so a rotated certificate changes those resources and not the listener. With sslConfig.sds
// the secrets come from the user's own SDS server instead, through a cluster to its targetUri.
import { isIP } from 'node:net';
import type {
  Cluster,
  CommonTlsContext,
  DataSource,
  TlsSecret,
  envoy_extensions_transport_sockets_tls_v3_SdsSecretConfig as SdsSecretConfig,
  envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext as ValidationContext,
  envoy_extensions_transport_sockets_tls_v3_DownstreamTlsContext as DownstreamTlsContext,
  envoy_extensions_transport_sockets_tls_v3_SubjectAltNameMatcher as SanMatcher,
} from '../../envoy/typed.js';
import { parseDuration } from './duration.js';
import { dataSource, extensionCluster } from './envoy-json.js';
import type { Problem, ResolveContext } from './feature.js';
import { DEFAULT_MIN_TLS, OCSP_STAPLE_POLICIES, tlsVersion, type SdsConfig, type SslConfig } from './features/tls/schema.js';
import type { DownstreamTlsIR, ProxyIR, SdsSourceIR } from './ir.js';
import { nsName } from './names.js';
import { checkTlsMaterial, tlsMaterialFromSecret } from './secrets.js';

/** The SDS name of a Secret's CA (ca.crt), next to its certificate's. */
export const caSdsName = (sdsName: string): string => `${sdsName}#ca`;
const ADS = { ads: {}, resource_api_version: 'V3' } as const;
/** Gloo's default when alpnProtocols is unset; ["allow_empty"] is its way of saying "no ALPN". */
const DEFAULT_ALPN = ['h2', 'http/1.1'];
const ALLOW_EMPTY = 'allow_empty';

export function ocspSource(staple: NonNullable<DownstreamTlsIR['ocspStaple']>): DataSource {
  return 'inlineBytes' in staple ? { inline_bytes: staple.inlineBytes } : dataSource(staple);
}

/**
 * An sslConfig's certificate and settings. `ns` is where a secretRef without a namespace resolves; `where` prefixes
 * messages (`sslConfig`, `spec.tcpGateway.tcpHosts[0].sslConfig`). Undefined when it names no certificate.
 */
export function downstreamTls(
  ssl: SslConfig,
  ns: string,
  ctx: Pick<ResolveContext, 'index'>,
  problems: Problem[],
  where = 'sslConfig',
  /** Settings gateway.virtualServiceOptions.oneWayTls (VirtualServices): taken when sslConfig sets no oneWayTls */
  oneWayTlsDefault?: boolean,
): DownstreamTlsIR | undefined {
  const sniDomains = ssl.sniDomains ?? [];
  let tls: DownstreamTlsIR;
  if (ssl.sslFiles) {
    const files = ssl.sslFiles;
    tls = { certChain: { filename: files.tlsCert }, privateKey: { filename: files.tlsKey }, sniDomains };
    if (files.rootCa !== undefined) tls.clientCa = { filename: files.rootCa };
    if (files.ocspStaple !== undefined) tls.ocspStaple = { filename: files.ocspStaple };
  } else if (ssl.secretRef) {
    const fromSecret = secretTls(ns, ssl.secretRef, sniDomains, ctx, problems, where);
    if (!fromSecret) return undefined;
    tls = fromSecret;
  } else if (ssl.sds) {
    const sds = sdsSource(ssl.sds, problems, `${where}.sds`);
    if (!sds) return undefined;
    tls = { sds, sniDomains };
  } else {
    return undefined;
  }
  return withOptions(tls, ssl, problems, where, oneWayTlsDefault);
}

/**
 * sslConfig.sds (Gloo's SDSConfig): Envoy asks the user's SDS server for the secrets by name, through a cluster to
 * targetUri, named clusterName when set (Gloo names a cluster of its own Envoy bootstrap there, which Legate's lacks).
 */
function sdsSource(sds: SdsConfig, problems: Problem[], at: string): SdsSourceIR | undefined {
  if (sds.targetUri === undefined) {
    const why = sds.clusterName
      ? `Legate's Envoy has no cluster ${JSON.stringify(sds.clusterName)} of its own; it makes that cluster from targetUri`
      : 'the address of the SDS server';
    problems.push({ code: 'InvalidTls', message: `${at}.targetUri: required (${why})` });
    return undefined;
  }
  const target = sdsTarget(sds.targetUri);
  if (!target) {
    problems.push({
      code: 'InvalidTls',
      message: `${at}.targetUri: ${JSON.stringify(sds.targetUri)} is not host:port, [ipv6]:port or unix:/path`,
    });
    return undefined;
  }
  const cluster = sds.clusterName ?? `legate-sds_${sds.targetUri.replace(/[^A-Za-z0-9_.-]/g, '_')}`;
  const out: SdsSourceIR = { cluster, target, certificatesSecretName: sds.certificatesSecretName };
  if (sds.validationContextName !== undefined) out.validationContextName = sds.validationContextName;
  return out;
}

/** gRPC's target forms Envoy can reach as a cluster: a Unix socket, or a host and port. */
function sdsTarget(uri: string): SdsSourceIR['target'] | undefined {
  const unix = /^unix:(?:\/\/)?(\/.+)$/.exec(uri);
  if (unix) return { pipe: unix[1]! };
  const hostPort = /^(?:dns:\/\/\/)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/.exec(uri);
  if (!hostPort) return undefined;
  const port = Number(hostPort[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: hostPort[1]!.replace(/^\[|\]$/g, ''), port };
}

/** The certificate, CA and OCSP staple of the Secret sslConfig.secretRef names. */
function secretTls(
  ns: string,
  ref: NonNullable<SslConfig['secretRef']>,
  sniDomains: string[],
  ctx: Pick<ResolveContext, 'index'>,
  problems: Problem[],
  at: string,
): DownstreamTlsIR | undefined {
  const secretNs = ref.namespace ?? ns;
  const secret = ctx.index.secrets.get(nsName(secretNs, ref.name));
  if (!secret) {
    problems.push({ code: 'SecretNotFound', message: `${at}.secretRef: Secret ${secretNs}.${ref.name} not found` });
    return undefined;
  }
  const material = tlsMaterialFromSecret(secret);
  const where = `${at}.secretRef (Secret ${secretNs}.${ref.name})`;
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
function withOptions(
  tls: DownstreamTlsIR,
  ssl: SslConfig,
  problems: Problem[],
  at: string,
  oneWayTlsDefault: boolean | undefined,
): DownstreamTlsIR | undefined {
  const bad = problems.length;
  // as Gloo: a CA means client certificates are verified, and required unless oneWayTls (its own, else the Settings')
  if (verifiesClients(tls)) tls.requireClientCertificate = (ssl.oneWayTls ?? oneWayTlsDefault) !== true;
  if (ssl.verifySubjectAltName?.length) {
    if (!verifiesClients(tls)) {
      problems.push({
        code: 'InvalidTls',
        message:
          `${at}.verifySubjectAltName: needs a CA to verify client certificates with (ca.crt in the Secret, sslFiles.rootCa ` +
          'or sds.validationContextName)',
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
      problems.push({ code: 'InvalidTls', message: `${at}.alpnProtocols: "${ALLOW_EMPTY}" means no ALPN and stands alone` });
    }
    tls.alpnProtocols = alpn[0] === ALLOW_EMPTY ? [] : [...alpn];
  }
  if (ssl.ocspStaplePolicy !== undefined) {
    const policy = typeof ssl.ocspStaplePolicy === 'number' ? OCSP_STAPLE_POLICIES[ssl.ocspStaplePolicy]! : ssl.ocspStaplePolicy;
    // an SDS server's certificate may carry its own staple
    if (policy === 'MUST_STAPLE' && !tls.ocspStaple && !tls.sds) {
      problems.push({
        code: 'InvalidTls',
        message: `${at}.ocspStaplePolicy: MUST_STAPLE needs an OCSP response (tls.ocsp-staple in the Secret, or sslFiles.ocspStaple)`,
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

export function commonTlsContext(tls: DownstreamTlsIR): CommonTlsContext {
  const p = tls.params;
  const params: NonNullable<CommonTlsContext['tls_params']> = { tls_minimum_protocol_version: p?.minimum ?? DEFAULT_MIN_TLS };
  if (p?.maximum) params.tls_maximum_protocol_version = p.maximum;
  if (p?.cipherSuites) params.cipher_suites = p.cipherSuites;
  if (p?.ecdhCurves) params.ecdh_curves = p.ecdhCurves;
  const common: CommonTlsContext = { tls_params: params };
  const alpn = tls.alpnProtocols ?? DEFAULT_ALPN;
  if (alpn.length) common.alpn_protocols = alpn;
  const userSds = tls.sds && sdsConfigSource(tls.sds.cluster);
  if (tls.sds && userSds) {
    common.tls_certificate_sds_secret_configs = [{ name: tls.sds.certificatesSecretName, sds_config: userSds }];
  } else if (tls.sdsName !== undefined) {
    common.tls_certificate_sds_secret_configs = [{ name: tls.sdsName, sds_config: ADS }];
  } else if (tls.certChain && tls.privateKey) {
    const certificate: NonNullable<CommonTlsContext['tls_certificates']>[number] = {
      certificate_chain: dataSource(tls.certChain),
      private_key: dataSource(tls.privateKey),
    };
    if (tls.ocspStaple) certificate.ocsp_staple = ocspSource(tls.ocspStaple);
    common.tls_certificates = [certificate];
  }
  if (verifiesClients(tls)) {
    const sans = tls.verifySubjectAltName?.length ? sanMatchers(tls.verifySubjectAltName) : undefined;
    const caName = tls.sds?.validationContextName ?? (tls.sdsName !== undefined ? caSdsName(tls.sdsName) : undefined);
    if (caName !== undefined) {
      const sds = { name: caName, sds_config: userSds ?? ADS };
      if (sans) {
        common.combined_validation_context = {
          default_validation_context: { match_typed_subject_alt_names: sans },
          validation_context_sds_secret_config: sds,
        };
      } else {
        common.validation_context_sds_secret_config = sds;
      }
    } else if (tls.clientCa) {
      const validation: ValidationContext = { trusted_ca: dataSource(tls.clientCa) };
      if (sans) validation.match_typed_subject_alt_names = sans;
      common.validation_context = validation;
    }
  }
  return common;
}

/** The DownstreamTlsContext of a certificate and its settings (a filter chain's transport socket). */
export function downstreamTlsContext(tls: DownstreamTlsIR): DownstreamTlsContext {
  const context: DownstreamTlsContext = { common_tls_context: commonTlsContext(tls) };
  if (verifiesClients(tls)) context.require_client_certificate = tls.requireClientCertificate ?? true;
  if (tls.ocspStaplePolicy) context.ocsp_staple_policy = tls.ocspStaplePolicy;
  if (tls.disableSessionResumption) context.disable_stateless_session_resumption = true;
  return context;
}

/** The SDS resources a certificate served over SDS needs (its certificate, its client CA), added to `into` once. */
export function sdsSecretsOf(tls: DownstreamTlsIR, into: Map<string, TlsSecret>): void {
  if (tls.sdsName === undefined || !tls.certChain || !tls.privateKey) return;
  if (!into.has(tls.sdsName)) {
    const certificate: TlsSecret['tls_certificate'] = {
      certificate_chain: dataSource(tls.certChain),
      private_key: dataSource(tls.privateKey),
    };
    if (tls.ocspStaple) certificate.ocsp_staple = ocspSource(tls.ocspStaple);
    into.set(tls.sdsName, { name: tls.sdsName, tls_certificate: certificate });
  }
  const caName = caSdsName(tls.sdsName);
  if (tls.clientCa && !into.has(caName)) into.set(caName, { name: caName, validation_context: { trusted_ca: dataSource(tls.clientCa) } });
}

/** Whether client certificates are verified: a CA (the Secret's, sslFiles.rootCa) or the user's SDS validation context. */
function verifiesClients(tls: DownstreamTlsIR): boolean {
  return tls.clientCa !== undefined || tls.sds?.validationContextName !== undefined;
}

/** The ConfigSource of secrets from the user's SDS server: SecretDiscoveryService over the cluster to it. */
function sdsConfigSource(cluster: string): NonNullable<SdsSecretConfig['sds_config']> {
  return {
    resource_api_version: 'V3',
    api_config_source: { api_type: 'GRPC', transport_api_version: 'V3', grpc_services: [{ envoy_grpc: { cluster_name: cluster } }] },
  };
}

/**
 * The clusters to the users' SDS servers (sslConfig.sds) the proxy's TLS contexts ask, one per name (the first
 * target wins for a clusterName two sslConfigs share): virtual hosts', TCP hosts' and matched gateways'.
 */
export function sdsClusters(proxy: ProxyIR): Cluster[] {
  const out = new Map<string, Cluster>();
  const add = (tls: DownstreamTlsIR | undefined): void => {
    const sds = tls?.sds;
    if (!sds || out.has(sds.cluster)) return;
    if ('host' in sds.target) out.set(sds.cluster, extensionCluster(sds.cluster, sds.target));
    else {
      const cluster = extensionCluster(sds.cluster, { host: '127.0.0.1', port: 1 });
      cluster.type = 'STATIC';
      delete cluster.dns_lookup_family;
      cluster.load_assignment = {
        cluster_name: sds.cluster,
        endpoints: [{ lb_endpoints: [{ endpoint: { address: { pipe: { path: sds.target.pipe } } } }] }],
      };
      out.set(sds.cluster, cluster);
    }
  };
  for (const l of proxy.listeners) {
    for (const vh of l.virtualHosts) add(vh.tls);
    for (const host of l.tcp?.hosts ?? []) add(host.tls);
    add(l.chain?.tls);
  }
  return [...out.values()];
}
