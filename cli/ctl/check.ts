// `legatectl check` (spec 4.5): one line per kind, then every problem found and a non-zero exit,
// or "No problems detected.".
import { isKnownKind } from '../../controller/api/kinds.js';
import { CliError, type Backend, type ListedResource, type ProxyInfo } from './backend.js';

/** The kinds in the order Gloo's glooctl checks them, with their -x names. */
export const CHECKS = [
  { title: 'Deployments', exclude: 'deployments' },
  { title: 'Pods', exclude: 'pods' },
  { title: 'Upstreams', exclude: 'upstreams', kind: 'Upstream', words: 'upstream' },
  { title: 'UpstreamGroups', exclude: 'upstreamgroup', kind: 'UpstreamGroup', words: 'upstream group' },
  { title: 'AuthConfigs', exclude: 'auth-configs', kind: 'AuthConfig', words: 'auth config' },
  { title: 'RateLimitConfigs', exclude: 'rate-limit-configs', kind: 'RateLimitConfig', words: 'rate limit config' },
  { title: 'VirtualHostOptions', exclude: 'virtual-host-options', kind: 'VirtualHostOption', words: 'virtual host option' },
  { title: 'RouteOptions', exclude: 'route-options', kind: 'RouteOption', words: 'route option' },
  { title: 'Secrets', exclude: 'secrets', kind: 'Secret', words: 'secret' },
  { title: 'VirtualServices', exclude: 'virtual-services', kind: 'VirtualService', words: 'virtual service' },
  { title: 'Gateways', exclude: 'gateways', kind: 'Gateway', words: 'gateway' },
  { title: 'Proxies', exclude: 'proxies', kind: 'Proxy', words: 'proxy' },
  // kinds glooctl's open-source check does not list, but Legate reads
  { title: 'RouteTables', exclude: 'route-tables', kind: 'RouteTable', words: 'route table' },
  { title: 'MatchableHttpGateways', exclude: 'http-gateways', kind: 'MatchableHttpGateway', words: 'matchable http gateway' },
  { title: 'MatchableTcpGateways', exclude: 'tcp-gateways', kind: 'MatchableTcpGateway', words: 'matchable tcp gateway' },
  { title: 'GraphQLApis', exclude: 'graphqlapis', kind: 'GraphQLApi', words: 'GraphQL API' },
  { title: 'GraphQLSchemas', exclude: 'graphqlschemas', kind: 'GraphQLSchema', words: 'GraphQL schema' },
  { title: 'Settings', exclude: 'settings', kind: 'Settings', words: 'settings' },
  { title: 'xds metrics', exclude: 'xds-metrics' },
  { title: 'config files', exclude: 'config-files' },
] as const;

export const EXCLUDE_NAMES: readonly string[] = CHECKS.map((c) => c.exclude);

const CHECKED_KINDS: ReadonlySet<string> = new Set(CHECKS.flatMap((c) => ('kind' in c ? [c.kind] : [])));

export interface CheckReport {
  resources: { name: string; status: string }[];
  messages: string[];
  errors: string[];
}

interface TypeStatus {
  sentVersion?: string;
  ackedVersion?: string;
  lastNack?: { version: string; message: string };
}

interface Connection {
  role: string;
  nodeId: string;
  types: Record<string, TypeStatus>;
}

function resourceProblems(items: ListedResource[], words: string): string[] {
  const problems: string[] = [];
  for (const r of items) {
    const entries = Object.entries(r.status?.statuses ?? {});
    if (!entries.length) {
      problems.push(`Found ${words} with no status: ${r.metadata.namespace} ${r.metadata.name}`);
      continue;
    }
    for (const [by, st] of entries) {
      if (st.state === 'Rejected')
        problems.push(`Found rejected ${words} by '${by}': ${r.metadata.namespace} ${r.metadata.name} (Reason: ${st.reason ?? 'unknown'})`);
      else if (st.state === 'Warning')
        problems.push(
          `Found ${words} with warnings by '${by}': ${r.metadata.namespace} ${r.metadata.name} (Reason: ${st.reason ?? 'unknown'})`,
        );
      else if (st.state === 'Pending')
        problems.push(`Found ${words} that is still pending by '${by}': ${r.metadata.namespace} ${r.metadata.name}`);
    }
    // on a cluster, a status written for an older generation means the latest edit is not processed yet
    const seen = r.status.observedGeneration;
    const generation = r.metadata.generation;
    if (typeof seen === 'number' && typeof generation === 'number' && seen < generation) {
      problems.push(
        `Found ${words} whose status is for generation ${seen}, not its current ${generation} (the controller has not ` +
          `processed its latest change): ${r.metadata.namespace} ${r.metadata.name}`,
      );
    }
  }
  return problems;
}

/** `gateway-proxy.legate-system`, with the pod on a cluster */
const proxyName = (proxy: ProxyInfo): string => `${proxy.namespace}.${proxy.name}${proxy.pod ? ` (pod ${proxy.pod})` : ''}`;

async function xdsProblems(backend: Backend): Promise<string[]> {
  const problems: string[] = [];
  const connections = await backend.api<Connection[]>('/api/v1/connections');
  for (const proxy of await backend.proxies()) {
    let connected: boolean;
    try {
      const stats = await backend.proxyAdmin(proxy, `/stats?filter=${encodeURIComponent('^control_plane\\.connected_state$')}`);
      connected = /control_plane\.connected_state: 1/.test(stats);
    } catch (err) {
      const why = backend.mode === 'kubernetes' && err instanceof Error ? `: ${err.message}` : '';
      problems.push(`Cannot reach the admin interface of proxy ${proxyName(proxy)} at ${proxy.adminUrl}${why}`);
      continue;
    }
    if (!connected) problems.push(`Proxy ${proxyName(proxy)} is not connected to the Legate control plane`);
    const streams = connections.filter((c) => c.role === proxy.role);
    if (connected && !streams.length) problems.push(`Proxy ${proxyName(proxy)} has no xDS stream for role ${proxy.role}`);
    for (const c of streams) {
      for (const [typeUrl, t] of Object.entries(c.types)) {
        if (t.lastNack && t.lastNack.version === t.sentVersion) {
          problems.push(
            `Your ${proxy.name} (${c.nodeId}) is out of sync with the Legate control plane and is not receiving valid config: it ` +
              `rejected ${typeUrl.split('.').pop()} (${t.lastNack.message})`,
          );
        }
      }
    }
  }
  return problems;
}

export async function runCheck(
  backend: Backend,
  exclude: ReadonlySet<string>,
  clientVersion: string,
  print: (line: string) => void,
): Promise<CheckReport> {
  const report: CheckReport = { resources: [], messages: [], errors: [] };
  const listing = await backend.resources();
  const all = listing.items;
  for (const check of CHECKS) {
    if (exclude.has(check.exclude)) continue;
    let problems: string[];
    try {
      problems = await checkOne(backend, check, all, listing.unavailable, clientVersion);
    } catch (err) {
      // one check that cannot be done is its problem, not the end of the others
      if (!(err instanceof CliError)) throw err;
      problems = [err.message];
    }
    const status = problems.length ? `${problems.length} Errors!` : 'OK';
    print(`Checking ${check.title}... ${status}`);
    report.resources.push({ name: check.title, status });
    report.errors.push(...problems);
  }
  return report;
}

async function checkOne(
  backend: Backend,
  check: (typeof CHECKS)[number],
  all: readonly ListedResource[],
  unavailable: readonly { kinds: readonly string[]; reason: string }[],
  clientVersion: string,
): Promise<string[]> {
  if (check.title === 'Deployments' || check.title === 'Pods') {
    return backend.componentProblems(check.title === 'Deployments' ? 'deployments' : 'pods', clientVersion);
  }
  if (check.title === 'xds metrics') return xdsProblems(backend);
  if (check.title === 'config files') {
    const errors = await backend.api<{ origin: string; message: string }[]>('/api/v1/errors');
    const problems = errors.map((e) => `Found a problem in the config files: ${e.origin}: ${e.message}`);
    // a document of a kind no check covers (a misspelt kind) is a problem of its file
    for (const r of all.filter((x) => !CHECKED_KINDS.has(x.kind) && !isKnownKind(x.kind))) {
      const reason = Object.values(r.status?.statuses ?? {})[0]?.reason ?? `unknown kind ${JSON.stringify(r.kind)}`;
      problems.push(`Found a problem in the config files: ${r.kind} ${r.metadata.namespace}.${r.metadata.name}: ${reason}`);
    }
    // a controller on a cluster says when it cannot read it (older controllers have no such endpoint)
    const source = await backend.api<{ description: string; problems: string[] }>('/api/v1/source').catch(() => undefined);
    for (const p of source?.problems ?? []) problems.push(`The resource source (${source?.description}) is not current: ${p}`);
    return problems;
  }
  const kind: string = check.kind;
  return [
    ...unavailable.filter((u) => u.kinds.includes(kind)).map((u) => `Cannot read the ${check.words} resources: ${u.reason}`),
    ...resourceProblems(
      all.filter((r) => r.kind === kind),
      check.words,
    ),
  ];
}
