// A Gateway's `hybridGateway` (Gloo's hybrid_translator.go): one listener whose connections are split by a matcher
// (source address ranges, and for TCP gateways SNI names and a certificate) between HTTP and TCP gateways, written
// inline (`matchedGateways`) or as MatchableHttpGateway / MatchableTcpGateway resources that `delegatedHttpGateways` /
// `delegatedTcpGateways` select by ref or selector (used only when there are no matchedGateways, as in Gloo). Each
// matched gateway is served as a Gateway of its own (the core selects its VirtualServices, the tcp feature its hosts);
// the core renders them as filter chains of one Envoy listener, each matching its source ranges.
import type { Gateway, LegateResource } from '../../../api/resources.js';
import type {
  HybridGateway,
  LabelSelector,
  MatchableHttpGatewaySpec,
  MatchableTcpGatewaySpec,
  PassthroughSslConfig,
} from '../../../api/schemas.js';
import { expressionsMatcher } from '../../delegation/select.js';
import { downstreamTls } from '../../downstream-tls.js';
import type { BindSink, Feature, GatewayChain, Problem, ResolveContext } from '../../feature.js';
import type { ChainMatchIR } from '../../ir.js';
import { nsName, sourceOf } from '../../names.js';
import type { CidrRange } from './schema.js';

/** Gloo's messages when a hybridGateway serves nothing. */
const EMPTY = 'hybrid gateway does not have any populated matched gateways';

const HTTP_MATCHER_SSL =
  "on an httpGateway a matcher's sslConfig only says that the VirtualServices with sslConfig are served, each with its own " +
  'certificate and SNI names; its fields as their defaults are not supported: set them in the VirtualServices';

export const hybridFeature: Feature = {
  name: 'hybrid',
  kinds: ['MatchableHttpGateway', 'MatchableTcpGateway'],
  resolve(ctx) {
    // each checked alone, keep last good; what they select and where they serve is decided per Gateway
    const http = ctx.resolveEach(ctx.ofKind('MatchableHttpGateway'), (gw) => checkMatchable(gw, gw.spec, 'http'));
    const tcp = ctx.resolveEach(ctx.ofKind('MatchableTcpGateway'), (gw) => checkMatchable(gw, gw.spec, 'tcp'));
    return {
      gatewayChains(gw, sink) {
        const hybrid = gw.spec.hybridGateway;
        if (!hybrid) return undefined;
        return hybrid.matchedGateways !== undefined
          ? matchedChains(gw, hybrid, ctx, sink)
          : delegatedChains(gw, hybrid, http.results, tcp.results, ctx, sink);
      },
    };
  },
};

interface Checked<S> {
  resource: LegateResource;
  spec: S;
}

function checkMatchable<S extends MatchableHttpGatewaySpec | MatchableTcpGatewaySpec>(
  r: LegateResource,
  spec: S,
  kind: 'http' | 'tcp',
): { ir?: Checked<S>; problems: Problem[] } {
  const problems: Problem[] = [];
  if (kind === 'http') {
    const ssl = spec.matcher?.sslConfig;
    if (ssl && Object.values(ssl).some((v) => v !== undefined)) {
      problems.push({ code: 'NotSupported', message: `spec.matcher.sslConfig: ${HTTP_MATCHER_SSL}` });
    }
    const expressions = (spec as MatchableHttpGatewaySpec).httpGateway.virtualServiceExpressions?.expressions;
    const bad = expressions && expressionsMatcher(expressions, 'the virtual service selector expression is invalid');
    if (typeof bad === 'string') problems.push({ code: 'InvalidSpec', message: `spec.httpGateway.virtualServiceExpressions.${bad}` });
  }
  problems.push(...rangeProblems(spec.matcher?.sourcePrefixRanges ?? [], 'spec.matcher.sourcePrefixRanges'));
  return problems.length ? { problems } : { ir: { resource: r, spec }, problems };
}

function rangeProblems(ranges: readonly CidrRange[], where: string): Problem[] {
  return ranges.flatMap((r, i) => {
    const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(r.addressPrefix);
    const v6 = !v4 && r.addressPrefix.includes(':');
    if (!v4 && !v6)
      return [{ code: 'InvalidSpec' as const, message: `${where}[${i}].addressPrefix: "${r.addressPrefix}" is not an IP address` }];
    if ((r.prefixLen ?? 0) > (v4 ? 32 : 128)) {
      return [{ code: 'InvalidSpec' as const, message: `${where}[${i}].prefixLen: at most ${v4 ? 32 : 128} for ${r.addressPrefix}` }];
    }
    return [];
  });
}

function chainMatch(
  name: string,
  matcher: { sourcePrefixRanges?: CidrRange[] | undefined; sslConfig?: PassthroughSslConfig | undefined } | undefined,
  tcp: boolean,
  ns: string,
  where: string,
  ctx: ResolveContext,
  sink: BindSink,
): ChainMatchIR {
  const match: ChainMatchIR = {
    name,
    sourcePrefixRanges: (matcher?.sourcePrefixRanges ?? []).map((r) => ({ addressPrefix: r.addressPrefix, prefixLen: r.prefixLen ?? 0 })),
  };
  const ssl = matcher?.sslConfig;
  if (tcp && ssl) {
    const names = [...new Set(ssl.sniDomains ?? [])].sort();
    if (names.length) match.serverNames = names;
    const bad = sink.problems.length;
    const tls = downstreamTls(ssl, ns, ctx, sink.problems, `${where}.sslConfig`);
    if (tls) match.tls = tls;
    const { sniDomains: _sni, secretRef: _ref, sslFiles: _files, sds: _sds, ...rest } = ssl;
    const settings = Object.keys(rest).filter((k) => rest[k as keyof typeof rest] !== undefined && rest[k as keyof typeof rest] !== null);
    if (!tls && sink.problems.length === bad && settings.length) {
      const message =
        `${where}.sslConfig: ${settings.join(', ')} ${settings.length > 1 ? 'need' : 'needs'} a certificate (secretRef or ` +
        'sslFiles) to terminate TLS with; without one the connection passes through by its SNI name only';
      sink.problems.push({ code: 'InvalidTls', message });
    }
  }
  return match;
}

/** Gloo's validateTcpHosts: with a matcher's SNI names, a tcpHost may only name some of them. */
function tcpSniProblems(chain: GatewayChain): Problem[] {
  const allowed = new Set(chain.match.serverNames ?? []);
  if (!allowed.size || !chain.tcpGateway) return [];
  const conflicting = (chain.tcpGateway.tcpHosts ?? []).flatMap((h) =>
    (h.sslConfig?.sniDomains ?? []).filter((d) => !allowed.has(d)).map((d) => `${h.name}:${d}`),
  );
  if (!conflicting.length) return [];
  return [{ code: 'DomainConflict', message: `${chain.where}: gateway has conflicting sni domains [${conflicting.join(' ')}]` }];
}

/** Each matched gateway needs a matcher of its own: Envoy refuses two filter chains that match the same connections. */
function duplicateMatchers(chains: readonly GatewayChain[]): Problem[] {
  const seen = new Map<string, GatewayChain>();
  const problems: Problem[] = [];
  for (const c of chains) {
    const key = JSON.stringify([
      c.match.sourcePrefixRanges.map((r) => `${r.addressPrefix}/${r.prefixLen}`).sort(),
      c.ssl,
      c.match.serverNames ?? [],
    ]);
    const other = seen.get(key);
    if (other) {
      problems.push({
        code: 'InvalidSpec',
        message: `${c.where}.matcher: the same as ${other.where}'s; each matched gateway needs a unique matcher`,
      });
    } else {
      seen.set(key, c);
    }
  }
  return problems;
}

function matchedChains(gw: Gateway, hybrid: HybridGateway, ctx: ResolveContext, sink: BindSink): GatewayChain[] {
  const ns = gw.metadata.namespace;
  const chains: GatewayChain[] = (hybrid.matchedGateways ?? []).map((m, i) => {
    const where = `spec.hybridGateway.matchedGateways[${i}]`;
    sink.problems.push(...rangeProblems(m.matcher?.sourcePrefixRanges ?? [], `${where}.matcher.sourcePrefixRanges`));
    const ssl = m.matcher?.sslConfig;
    if (m.httpGateway && ssl && Object.values(ssl).some((v) => v !== undefined)) {
      sink.problems.push({ code: 'NotSupported', message: `${where}.matcher.sslConfig: ${HTTP_MATCHER_SSL}` });
    }
    const chain: GatewayChain = {
      match: chainMatch(`matched-${i}`, m.matcher, m.tcpGateway !== undefined, ns, `${where}.matcher`, ctx, sink),
      where,
      ssl: m.httpGateway !== undefined && ssl !== undefined,
      ...(m.httpGateway ? { httpGateway: m.httpGateway } : {}),
      ...(m.tcpGateway ? { tcpGateway: m.tcpGateway } : {}),
    };
    sink.problems.push(...tcpSniProblems(chain));
    return chain;
  });
  if (!chains.length) sink.problems.push({ code: 'InvalidSpec', message: `spec.hybridGateway.matchedGateways: ${EMPTY}` });
  sink.problems.push(...duplicateMatchers(chains));
  return chains;
}

/** Whether a selector (Gloo's selectors.proto: namespaces, default all; labels and expressions) picks a resource. */
function selects(selector: LabelSelector, r: LegateResource): boolean {
  const namespaces = selector.namespaces ?? [];
  if (namespaces.length && !namespaces.includes('*') && !namespaces.includes(r.metadata.namespace)) return false;
  const labels = r.metadata.labels ?? {};
  if (!Object.entries(selector.labels ?? {}).every(([k, v]) => labels[k] === v)) return false;
  const matcher = expressionsMatcher(selector.expressions ?? [], '');
  return typeof matcher !== 'string' && matcher(labels);
}

function delegatedChains(
  gw: Gateway,
  hybrid: HybridGateway,
  httpGateways: ReadonlyMap<string, Checked<MatchableHttpGatewaySpec>>,
  tcpGateways: ReadonlyMap<string, Checked<MatchableTcpGatewaySpec>>,
  ctx: ResolveContext,
  sink: BindSink,
): GatewayChain[] {
  const ns = gw.metadata.namespace;
  const pick = <S>(
    delegated: { ref?: { name: string; namespace?: string | undefined } | undefined; selector?: LabelSelector | undefined } | undefined,
    from: ReadonlyMap<string, Checked<S>>,
    kind: string,
    where: string,
  ): Checked<S>[] => {
    if (!delegated) return [];
    if (delegated.selector) {
      const bad = expressionsMatcher(delegated.selector.expressions ?? [], 'the selector expression is invalid');
      if (typeof bad === 'string') {
        sink.problems.push({ code: 'InvalidSpec', message: `${where}.selector.${bad}` });
        return [];
      }
    }
    const ordered = [...from.values()].sort((a, b) =>
      nsName(a.resource.metadata.namespace, a.resource.metadata.name).localeCompare(
        nsName(b.resource.metadata.namespace, b.resource.metadata.name),
      ),
    );
    if (delegated.ref) {
      const refNs = delegated.ref.namespace ?? ns;
      const found = from.get(nsName(refNs, delegated.ref.name));
      if (!found)
        sink.warnings.push({ code: 'MatchableGatewayNotFound', message: `${where}.ref: ${kind} ${refNs}.${delegated.ref.name} not found` });
      return found ? [found] : [];
    }
    return ordered.filter((g) => delegated.selector !== undefined && selects(delegated.selector, g.resource));
  };
  const chains: GatewayChain[] = [];
  const delegatedHttp = hybrid.delegatedHttpGateways;
  for (const g of pick(delegatedHttp, httpGateways, 'MatchableHttpGateway', 'spec.hybridGateway.delegatedHttpGateways')) {
    const name = `${g.resource.metadata.namespace}.${g.resource.metadata.name}`;
    const where = `MatchableHttpGateway ${name}: spec`;
    // Gloo selects only the ones whose ssl-ness matches the delegation's; a delegation never has sslConfig here
    if (g.spec.matcher?.sslConfig) {
      const message =
        `spec.hybridGateway.delegatedHttpGateways: MatchableHttpGateway ${name} has matcher.sslConfig, which only a ` +
        'delegation with sslConfig selects (Gloo skips it); it is not served';
      sink.warnings.push({ code: 'NotSupported', message });
      continue;
    }
    let httpGateway = g.spec.httpGateway;
    const parent = delegatedHttp?.httpConnectionManagerSettings;
    if (parent) {
      // the Gateway's settings under the MatchableHttpGateway's, or over them with preventChildOverrides
      const child = httpGateway.options?.httpConnectionManagerSettings ?? {};
      const merged = delegatedHttp.preventChildOverrides ? { ...child, ...parent } : { ...parent, ...child };
      httpGateway = { ...httpGateway, options: { ...httpGateway.options, httpConnectionManagerSettings: merged } };
    }
    const match = chainMatch(name, g.spec.matcher, false, g.resource.metadata.namespace, `${where}.matcher`, ctx, sink);
    chains.push({ match: { ...match, source: sourceOf(g.resource) }, where, ssl: false, httpGateway });
  }
  for (const g of pick(hybrid.delegatedTcpGateways, tcpGateways, 'MatchableTcpGateway', 'spec.hybridGateway.delegatedTcpGateways')) {
    const name = `${g.resource.metadata.namespace}.${g.resource.metadata.name}`;
    const where = `MatchableTcpGateway ${name}: spec`;
    const match = chainMatch(name, g.spec.matcher, true, g.resource.metadata.namespace, `${where}.matcher`, ctx, sink);
    const chain: GatewayChain = { match: { ...match, source: sourceOf(g.resource) }, where, ssl: false, tcpGateway: g.spec.tcpGateway };
    sink.problems.push(...tcpSniProblems(chain));
    chains.push(chain);
  }
  // missing refs are warnings, so resources apply in any order
  if (!chains.length) sink.warnings.push({ code: 'MatchableGatewayNotFound', message: `spec.hybridGateway: ${EMPTY}` });
  sink.problems.push(...duplicateMatchers(chains));
  return chains;
}
