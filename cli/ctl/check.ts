// `legatectl check` (spec 4.5): one line per kind, then every problem found and a non-zero exit,
// or "No problems detected.".
import { isKnownKind } from '../../controller/api/kinds.js';
import type { Backend, ComponentHealth, ListedResource } from './backend.js';

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

function componentProblems(health: ComponentHealth[], pods: boolean, clientVersion: string): string[] {
  const problems: string[] = [];
  for (const h of health) {
    if (!pods) {
      if (!h.deployed || !h.running) problems.push(`Deployment ${h.name} is not available! Message: ${h.message ?? 'not running'}`);
      continue;
    }
    if (!h.running) continue; // already reported under Deployments
    if (!h.ready) problems.push(`Pod ${h.name} is not ready! Message: ${h.message ?? 'not ready'}`);
    else if (h.name !== 'envoy' && h.version && h.version !== clientVersion) {
      problems.push(`Pod ${h.name} runs version ${h.version}, legatectl is ${clientVersion}`);
    }
  }
  return problems;
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
  }
  return problems;
}

async function xdsProblems(backend: Backend): Promise<string[]> {
  const problems: string[] = [];
  const connections = await backend.api<Connection[]>('/api/v1/connections');
  for (const proxy of await backend.proxies()) {
    let connected: boolean;
    try {
      const res = await fetch(`${proxy.adminUrl}/stats?filter=${encodeURIComponent('^control_plane\\.connected_state$')}`, {
        signal: AbortSignal.timeout(3000),
      });
      connected = /control_plane\.connected_state: 1/.test(await res.text());
    } catch {
      problems.push(`Cannot reach the admin interface of proxy ${proxy.namespace}.${proxy.name} at ${proxy.adminUrl}`);
      continue;
    }
    if (!connected) problems.push(`Proxy ${proxy.namespace}.${proxy.name} is not connected to the Legate control plane`);
    const streams = connections.filter((c) => c.role === proxy.role);
    if (connected && !streams.length) problems.push(`Proxy ${proxy.namespace}.${proxy.name} has no xDS stream for role ${proxy.role}`);
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
  let health: ComponentHealth[] | undefined;
  const all = await backend.api<ListedResource[]>('/api/v1/resources');
  for (const check of CHECKS) {
    if (exclude.has(check.exclude)) continue;
    let problems: string[];
    if (check.title === 'Deployments' || check.title === 'Pods') {
      health ??= await backend.components();
      problems = componentProblems(health, check.title === 'Pods', clientVersion);
    } else if (check.title === 'xds metrics') {
      problems = await xdsProblems(backend);
    } else if (check.title === 'config files') {
      const errors = await backend.api<{ origin: string; message: string }[]>('/api/v1/errors');
      problems = errors.map((e) => `Found a problem in the config files: ${e.origin}: ${e.message}`);
      // a document of a kind no check covers (a misspelt kind) is a problem of its file
      for (const r of all.filter((x) => !CHECKED_KINDS.has(x.kind) && !isKnownKind(x.kind))) {
        const reason = Object.values(r.status?.statuses ?? {})[0]?.reason ?? `unknown kind ${JSON.stringify(r.kind)}`;
        problems.push(`Found a problem in the config files: ${r.kind} ${r.metadata.namespace}.${r.metadata.name}: ${reason}`);
      }
      // a controller on a cluster says when it cannot read it (older controllers have no such endpoint)
      const source = await backend.api<{ description: string; problems: string[] }>('/api/v1/source').catch(() => undefined);
      for (const p of source?.problems ?? []) problems.push(`The resource source (${source?.description}) is not current: ${p}`);
    } else {
      problems = resourceProblems(
        all.filter((r) => r.kind === check.kind),
        check.words,
      );
    }
    const status = problems.length ? `${problems.length} Errors!` : 'OK';
    print(`Checking ${check.title}... ${status}`);
    report.resources.push({ name: check.title, status });
    report.errors.push(...problems);
  }
  return report;
}
