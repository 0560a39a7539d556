// Stage 1 for upstreams: Upstream resources -> UpstreamIR, resolving kube Services/Endpoints and TLS.
import { isIP } from 'node:net';
import type { Endpoints, Service, Upstream } from '../../../api/resources.js';
import type { UpstreamSslConfig } from './schema.js';
import { tlsVersion } from '../../../api/primitives.js';
import type { LoadBalancerConfig, SubsetSpec } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem, ResourceIndex } from '../../feature.js';
import type { EndpointIR, LoadBalancerIR, SubsetsIR, UpstreamIR, UpstreamTlsIR } from '../../ir.js';
import { connectionOf, failoverOf } from './options.js';
import { clusterName, nsName, sourceOf } from '../../names.js';
import { checkTlsMaterial, tlsMaterialFromSecret } from '../../secrets.js';
import { resolveTranscoder } from '../../grpc-transcoder.js';

export function resolveUpstream(upstream: Upstream, index: ResourceIndex): Attempt<UpstreamIR> {
  const problems: Attempt<UpstreamIR>['problems'] = [];
  const spec = upstream.spec;
  const ns = upstream.metadata.namespace;
  let endpoints: EndpointIR[] = [];
  let discovery: UpstreamIR['discovery'] = 'EDS';
  let defaultSni: string | undefined;
  let tlsOn = false;

  if (spec.static) {
    endpoints = spec.static.hosts.map((h) => ({
      address: h.addr,
      port: h.port,
      ...(h.loadBalancingWeight ? { weight: h.loadBalancingWeight } : {}),
      ...(h.metadata && Object.keys(h.metadata).length ? { metadata: h.metadata } : {}),
    }));
    if (spec.static.hosts.some((h) => isIP(h.addr) === 0)) discovery = 'STRICT_DNS';
    const first = spec.static.hosts[0];
    // As in Gloo: a host on 443 turns TLS on unless useTls says otherwise.
    tlsOn = spec.static.useTls ?? spec.static.hosts.some((h) => h.port === 443);
    if (first && spec.static.autoSniRewrite !== false) defaultSni = first.sniAddr ?? (isIP(first.addr) ? undefined : first.addr);
  } else if (spec.pipe) {
    // Envoy connects to the socket itself: an EDS endpoint whose address is a pipe
    endpoints = [{ address: spec.pipe.path, port: 0, pipe: true }];
  } else if (spec.kube) {
    const { serviceName, serviceNamespace, servicePort } = spec.kube;
    const service = index.services.get(nsName(serviceNamespace, serviceName));
    if (!service) {
      problems.push({ code: 'ServiceNotFound', message: `kube: Service ${serviceNamespace}.${serviceName} not found` });
    } else {
      const port = service.spec.spec.ports.find((p) => p.port === servicePort);
      if (!port) {
        const have = service.spec.spec.ports.map((p) => p.port).join(', ');
        problems.push({
          code: 'ServicePortNotFound',
          message: `kube: Service ${serviceNamespace}.${serviceName} has no port ${servicePort} (ports: ${have})`,
        });
      } else {
        const selector = spec.kube.selector ?? {};
        const serviceSelector = service.spec.spec.selector ?? {};
        const narrower = Object.entries(selector).filter(([k, v]) => serviceSelector[k] !== v);
        if (narrower.length) {
          problems.push({
            code: 'NotSupported',
            message:
              `kube.selector: ${narrower.map(([k, v]) => `${k}=${v}`).join(', ')} is not in the selector of Service ` +
              `${serviceNamespace}.${serviceName}: Legate reads EndpointSlices, which carry no pod labels, so it cannot keep ` +
              "only some of a Service's pods; select them with a Service of their own (a selector the Service has is honoured)",
          });
        }
        endpoints = kubeEndpoints(index.endpoints.get(nsName(serviceNamespace, serviceName)), port, service.spec.spec.ports.length);
      }
    }
  }

  let tls: UpstreamTlsIR | undefined;
  if (spec.sslConfig || tlsOn) tls = upstreamTlsOf(spec.sslConfig, defaultSni, ns, index, problems, 'sslConfig');

  const warnings: Problem[] = [];
  const loadBalancer = spec.loadBalancerConfig ? loadBalancerOf(spec.loadBalancerConfig, warnings, spec.failover !== undefined) : undefined;
  const subsets = spec.static?.subsetSpec ? subsetsOf(spec.static.subsetSpec, spec.static.hosts, warnings) : undefined;

  const connection = connectionOf(spec, warnings);
  const failover = spec.failover ? failoverOf(spec.failover) : undefined;
  // a failover endpoint's own TLS (Envoy picks it by the endpoint's transport socket match)
  spec.failover?.prioritizedLocalities.forEach((p, i) =>
    p.localityEndpoints.forEach((l, j) =>
      l.lbEndpoints.forEach((e, k) => {
        const at = `failover.prioritizedLocalities[${i}].localityEndpoints[${j}].lbEndpoints[${k}].upstreamSslConfig`;
        const endpoint = failover?.[i]?.localities[j]?.endpoints[k];
        if (e.upstreamSslConfig && endpoint) endpoint.tls = upstreamTlsOf(e.upstreamSslConfig, undefined, ns, index, problems, at);
      }),
    ),
  );
  if (failover && discovery === 'EDS' && failover.some((p) => p.localities.some((l) => l.endpoints.some((e) => isIP(e.address) === 0)))) {
    // EDS carries IPs only: a DNS name among the failover endpoints makes the cluster resolve its hosts itself
    if (spec.kube) problems.push({ code: 'InvalidSpec', message: 'failover: the endpoints of a kube upstream must be IP addresses' });
    else discovery = 'STRICT_DNS';
  }
  if ((spec.dnsRefreshRate !== undefined || spec.respectDnsTtl !== undefined) && discovery === 'EDS') {
    warnings.push({
      code: 'InvalidSpec',
      message: 'dnsRefreshRate, respectDnsTtl: this upstream has IP endpoints only (no DNS names to resolve), so they change nothing',
    });
  }

  let tunnel: UpstreamIR['tunnel'];
  // checked even without httpProxyHostname (what they name must exist), used only with it
  const connectTls = spec.httpConnectSslConfig
    ? upstreamTlsOf(spec.httpConnectSslConfig, undefined, ns, index, problems, 'httpConnectSslConfig')
    : undefined;
  const connectHeaders = (spec.httpConnectHeaders ?? []).map((h, i) => {
    // Envoy formats these values: a % starts one of its %OPERATOR% values
    if (h.value.replace(/%(%|[A-Z_][A-Z0-9_]*(\([^)]*\))?(:\d+)?%)/g, '').includes('%') || /[\0\r\n]/.test(h.value)) {
      const message = `httpConnectHeaders[${i}].value: a line break, NUL or lone % (write a literal % as %%) Envoy cannot send`;
      problems.push({ code: 'InvalidSpec', message });
    }
    return { key: h.key, value: h.value };
  });
  if (spec.httpProxyHostname !== undefined) {
    tunnel = { hostname: spec.httpProxyHostname, headers: connectHeaders, ...(connectTls ? { tls: connectTls } : {}) };
    if (!/:\d+$/.test(spec.httpProxyHostname)) {
      const host = spec.httpProxyHostname;
      const message = `httpProxyHostname: ${host} has no port; a CONNECT request names host:port (e.g. ${host}:443)`;
      problems.push({ code: 'InvalidSpec', message });
    }
    if (spec.failover) problems.push({ code: 'InvalidSpec', message: 'failover: not with httpProxyHostname (the hosts are the proxy)' });
  } else if (spec.httpConnectSslConfig || spec.httpConnectHeaders) {
    const message = 'httpConnectSslConfig, httpConnectHeaders: apply only with httpProxyHostname (the upstream is a CONNECT proxy)';
    warnings.push({ code: 'InvalidSpec', message });
  }
  const serviceSpec = spec.static?.serviceSpec ?? spec.kube?.serviceSpec ?? spec.pipe?.serviceSpec;
  const transcoder = serviceSpec?.grpcJsonTranscoder
    ? resolveTranscoder(serviceSpec.grpcJsonTranscoder, 'serviceSpec.grpcJsonTranscoder', ns, index.configMaps, problems)
    : undefined;
  if (transcoder && !spec.useHttp2) {
    warnings.push({ code: 'InvalidSpec', message: 'serviceSpec.grpcJsonTranscoder: gRPC needs HTTP/2; set useHttp2: true' });
  }
  if (problems.length) return { problems, warnings };
  const ir: UpstreamIR = {
    cluster: clusterName(ns, upstream.metadata.name),
    source: sourceOf(upstream),
    discovery,
    endpoints,
    http2: spec.useHttp2 ?? false,
    connectTimeout: parseDuration(spec.connectionConfig?.connectTimeout ?? '5s'),
  };
  if (tls) ir.tls = tls;
  if (transcoder) ir.grpcJsonTranscoder = transcoder;
  if (tunnel) {
    ir.tunnel = tunnel;
    // not EDS: the cluster's one endpoint is the internal listener (the proxy's cluster carries the hosts)
    ir.discovery = 'STRICT_DNS';
  }
  if (loadBalancer) ir.loadBalancer = loadBalancer;
  if (subsets) ir.subsets = subsets;
  if (connection) ir.connection = connection;
  if (failover) ir.failover = failover;
  if (spec.proxyProtocolVersion) ir.proxyProtocol = spec.proxyProtocolVersion;
  if (discovery === 'STRICT_DNS') {
    if (spec.dnsRefreshRate !== undefined) ir.dnsRefreshRate = parseDuration(spec.dnsRefreshRate);
    if (spec.respectDnsTtl !== undefined) ir.respectDnsTtl = spec.respectDnsTtl;
  }
  const pre = spec.preconnectPolicy;
  if (pre && (pre.perUpstreamPreconnectRatio !== undefined || pre.predictivePreconnectRatio !== undefined)) {
    ir.preconnect = {
      ...(pre.perUpstreamPreconnectRatio !== undefined ? { perUpstreamRatio: pre.perUpstreamPreconnectRatio } : {}),
      ...(pre.predictivePreconnectRatio !== undefined ? { predictiveRatio: pre.predictivePreconnectRatio } : {}),
    };
  }
  return { ir, problems, warnings };
}

/** loadBalancerConfig -> LoadBalancerIR (the schema checked shapes and ranges). */
function loadBalancerOf(lb: LoadBalancerConfig, warnings: Problem[], hasLocalities: boolean): LoadBalancerIR {
  const ir: LoadBalancerIR = {};
  const slowStart = (s: NonNullable<NonNullable<LoadBalancerConfig['roundRobin']>['slowStartConfig']>): LoadBalancerIR['slowStart'] => ({
    ...(s.slowStartWindow !== undefined ? { window: parseDuration(s.slowStartWindow) } : {}),
    ...(s.aggression !== undefined ? { aggression: s.aggression } : {}),
    ...(s.minWeightPercent !== undefined ? { minWeightPercent: s.minWeightPercent } : {}),
  });
  if (lb.roundRobin) {
    ir.policy = 'roundRobin';
    if (lb.roundRobin.slowStartConfig) ir.slowStart = slowStart(lb.roundRobin.slowStartConfig);
  } else if (lb.leastRequest) {
    ir.policy = 'leastRequest';
    if (lb.leastRequest.choiceCount !== undefined) ir.choiceCount = lb.leastRequest.choiceCount;
    if (lb.leastRequest.slowStartConfig) ir.slowStart = slowStart(lb.leastRequest.slowStartConfig);
  } else if (lb.random) {
    ir.policy = 'random';
  } else if (lb.ringHash) {
    ir.policy = 'ringHash';
    const ring = lb.ringHash.ringHashConfig;
    if (ring?.minimumRingSize !== undefined) ir.minimumRingSize = ring.minimumRingSize;
    if (ring?.maximumRingSize !== undefined) ir.maximumRingSize = ring.maximumRingSize;
  } else if (lb.maglev) {
    ir.policy = 'maglev';
  }
  if (lb.healthyPanicThreshold !== undefined) ir.healthyPanicThreshold = lb.healthyPanicThreshold;
  if (lb.updateMergeWindow !== undefined) ir.updateMergeWindow = parseDuration(lb.updateMergeWindow);
  if (lb.localityWeightedLbConfig) {
    ir.localityWeighted = true;
    // failover localities carry weights; without failover every endpoint is in one locality
    if (!hasLocalities)
      warnings.push({
        code: 'NotSupported',
        message:
          "loadBalancerConfig.localityWeightedLbConfig: Legate puts all of an upstream's endpoints in one locality, " +
          'so locality weights change nothing',
      });
  }
  if (lb.useHostnameForHashing) {
    ir.useHostnameForHashing = true;
    if (ir.policy !== 'ringHash' && ir.policy !== 'maglev') {
      warnings.push({ code: 'InvalidSpec', message: 'loadBalancerConfig.useHostnameForHashing: only ringHash and maglev hash hosts' });
    }
  }
  if (lb.closeConnectionsOnHostSetChange) ir.closeConnectionsOnHostSetChange = true;
  return ir;
}

/** static.subsetSpec -> SubsetsIR; warns of selectors no host can be in (a subset nothing falls into). */
function subsetsOf(spec: SubsetSpec, hosts: NonNullable<Upstream['spec']['static']>['hosts'], warnings: Problem[]): SubsetsIR {
  const ir: SubsetsIR = {
    selectors: spec.selectors.map((s) => ({ keys: s.keys, ...(s.singleHostPerSubset ? { singleHostPerSubset: true as const } : {}) })),
    fallbackPolicy: spec.fallbackPolicy ?? 'ANY_ENDPOINT',
  };
  if (spec.defaultSubset) ir.defaultSubset = spec.defaultSubset.values;
  if (ir.fallbackPolicy === 'DEFAULT_SUBSET' && !spec.defaultSubset) {
    warnings.push({
      code: 'InvalidSpec',
      message: 'static.subsetSpec.fallbackPolicy: DEFAULT_SUBSET without defaultSubset falls back to no endpoint',
    });
  }
  spec.selectors.forEach((s, i) => {
    const covered = hosts.some((h) => s.keys.every((k) => h.metadata?.['envoy.lb']?.[k] !== undefined));
    if (!covered) {
      warnings.push({
        code: 'InvalidSpec',
        message: `static.subsetSpec.selectors[${i}]: no host has metadata envoy.lb with every key of [${s.keys.join(', ')}]`,
      });
    }
  });
  return ir;
}

type ServicePort = Service['spec']['spec']['ports'][number];

/** Ready addresses of the Endpoints object for one Service port (matched by port name, as kube does). */
function kubeEndpoints(endpoints: Endpoints | undefined, port: ServicePort, portCount: number): EndpointIR[] {
  const result: EndpointIR[] = [];
  for (const subset of endpoints?.spec.subsets ?? []) {
    const ports = subset.ports ?? [];
    const match = ports.find((p) => (p.name ?? '') === (port.name ?? '')) ?? (portCount === 1 && ports.length === 1 ? ports[0] : undefined);
    const targetPort = match?.port ?? (typeof port.targetPort === 'number' ? port.targetPort : undefined);
    if (targetPort === undefined) continue;
    for (const address of subset.addresses ?? []) result.push({ address: address.ip, port: targetPort });
  }
  return result;
}

/** An sslConfig (the Upstream's, or a failover endpoint's upstreamSslConfig) -> UpstreamTlsIR; problems name `at`. */
function upstreamTlsOf(
  ssl: UpstreamSslConfig | undefined,
  defaultSni: string | undefined,
  ns: string,
  index: ResourceIndex,
  problems: Problem[],
  at: string,
): UpstreamTlsIR {
  const tls: UpstreamTlsIR = { verifySubjectAltName: ssl?.verifySubjectAltName ?? [], alpnProtocols: ssl?.alpnProtocols ?? [] };
  const sni = ssl?.sni ?? defaultSni;
  if (sni) tls.sni = sni;
  const params = ssl?.parameters;
  const min = tlsVersion(params?.minimumProtocolVersion);
  const max = tlsVersion(params?.maximumProtocolVersion);
  if (min) tls.minimumVersion = min;
  if (max) tls.maximumVersion = max;
  if (params?.cipherSuites?.length) tls.cipherSuites = params.cipherSuites;
  if (params?.ecdhCurves?.length) tls.ecdhCurves = params.ecdhCurves;
  if (ssl?.allowRenegotiation) tls.allowRenegotiation = true;
  let secretMissing = false;
  if (ssl?.secretRef) {
    const secretNs = ssl.secretRef.namespace ?? ns;
    const secret = index.secrets.get(nsName(secretNs, ssl.secretRef.name));
    if (!secret) {
      secretMissing = true;
      problems.push({ code: 'SecretNotFound', message: `${at}.secretRef: Secret ${secretNs}.${ssl.secretRef.name} not found` });
    } else {
      const material = tlsMaterialFromSecret(secret);
      if (!material.rootCa && !material.certChain) {
        problems.push({
          code: 'InvalidTls',
          message: `${at}.secretRef: Secret ${secretNs}.${ssl.secretRef.name} has none of tls.crt, ca.crt`,
        });
      }
      for (const message of checkTlsMaterial(material, `${at}.secretRef (Secret ${secretNs}.${ssl.secretRef.name})`)) {
        problems.push({ code: 'InvalidTls', message });
      }
      if (material.rootCa) tls.rootCa = { inline: material.rootCa };
      if (material.certChain) tls.certChain = { inline: material.certChain };
      if (material.privateKey) tls.privateKey = { inline: material.privateKey };
    }
  } else if (ssl?.sslFiles) {
    const files = ssl.sslFiles;
    if ((files.tlsCert === undefined) !== (files.tlsKey === undefined)) {
      problems.push({ code: 'InvalidTls', message: `${at}.sslFiles: tlsCert and tlsKey must be set together` });
    }
    if (!files.tlsCert && !files.rootCa)
      problems.push({ code: 'InvalidTls', message: `${at}.sslFiles: set rootCa and/or tlsCert with tlsKey` });
    if (files.rootCa) tls.rootCa = { filename: files.rootCa };
    if (files.tlsCert) tls.certChain = { filename: files.tlsCert };
    if (files.tlsKey) tls.privateKey = { filename: files.tlsKey };
  }
  // Envoy checks the names of a certificate it verified: with no CA it verifies nothing (Gloo refuses it too)
  if (tls.verifySubjectAltName.length && !tls.rootCa && !secretMissing) {
    problems.push({
      code: 'InvalidTls',
      message:
        'sslConfig.verifySubjectAltName: needs a CA to verify the upstream certificate against (ca.crt in secretRef, or sslFiles.rootCa)',
    });
  }
  return tls;
}
