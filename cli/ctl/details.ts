// The DETAILS column of `legatectl get` (one short line per kind), and the forms `-o` prints.
import type { ListedResource } from './backend.js';

type Spec = Record<string, unknown>;
const keys = (o: unknown): string[] => (o && typeof o === 'object' ? Object.keys(o) : []);
const count = (o: unknown): number => (Array.isArray(o) ? o.length : keys(o).length);

interface RouteLike {
  matchers?: { prefix?: string; exact?: string; regex?: string }[];
  routeAction?: { single?: { upstream?: { name?: string; namespace?: string } }; multi?: unknown; upstreamGroup?: { name?: string } };
  delegateAction?: { ref?: { name?: string }; name?: string; selector?: unknown };
  directResponseAction?: { status?: number };
  redirectAction?: unknown;
  graphqlApiRef?: { name?: string };
}

/** `/api -> us legate-system.app` for -o wide. */
function routeSummary(r: RouteLike): string {
  const m = r.matchers?.[0];
  const match = m?.prefix ?? m?.exact ?? (m?.regex ? `~${m.regex}` : '/');
  const a = r.routeAction;
  const to = a?.single?.upstream
    ? `${a.single.upstream.namespace ? `${a.single.upstream.namespace}.` : ''}${a.single.upstream.name ?? '?'}`
    : a?.upstreamGroup
      ? `group ${a.upstreamGroup.name ?? '?'}`
      : a?.multi
        ? 'multi'
        : r.delegateAction
          ? `delegate ${r.delegateAction.ref?.name ?? r.delegateAction.name ?? 'selector'}`
          : r.directResponseAction
            ? `direct ${r.directResponseAction.status ?? ''}`.trim()
            : r.redirectAction
              ? 'redirect'
              : r.graphqlApiRef
                ? `graphql ${r.graphqlApiRef.name ?? '?'}`
                : '?';
  return `${match}->${to}`;
}

export function details(r: ListedResource, wide = false): string {
  const spec: Spec = r.spec ?? {};
  switch (r.kind) {
    case 'VirtualService': {
      const vh = spec['virtualHost'] as { domains?: string[]; routes?: RouteLike[] } | undefined;
      const base = `domains=${(vh?.domains?.length ? vh.domains : ['*']).join(',')} routes=${vh?.routes?.length ?? 0}`;
      return wide && vh?.routes?.length ? `${base} ${vh.routes.map(routeSummary).join(' ')}` : base;
    }
    case 'RouteTable': {
      const routes = (spec['routes'] as RouteLike[] | undefined) ?? [];
      const delegating = routes.filter((x) => x.delegateAction !== undefined).length;
      const base = `routes=${routes.length}${delegating ? ` delegating=${delegating}` : ''} weight=${String(spec['weight'] ?? 0)}`;
      return wide && routes.length ? `${base} ${routes.map(routeSummary).join(' ')}` : base;
    }
    case 'Upstream': {
      const s = spec as {
        static?: { hosts: { addr: string; port: number }[] };
        kube?: { serviceNamespace: string; serviceName: string; servicePort: number };
        aws?: { region: string; lambdaFunctions?: { logicalName?: string; lambdaFunctionName: string }[] };
        azure?: { functionAppName: string; functions?: { functionName: string }[] };
      };
      if (s.static) return `static ${s.static.hosts.map((h) => `${h.addr}:${h.port}`).join(',')}`;
      if (s.kube) return `kube ${s.kube.serviceNamespace}/${s.kube.serviceName}:${s.kube.servicePort}`;
      if (s.aws)
        return `aws ${s.aws.region} functions=${(s.aws.lambdaFunctions ?? []).map((f) => f.logicalName || f.lambdaFunctionName).join(',')}`;
      if (s.azure) return `azure ${s.azure.functionAppName} functions=${(s.azure.functions ?? []).map((f) => f.functionName).join(',')}`;
      return keys(spec).join(',');
    }
    case 'Gateway':
      return `bind=${String(spec['bindAddress'] ?? '::')}:${String(spec['bindPort'])}${spec['ssl'] ? ' ssl' : ''}`;
    case 'UpstreamGroup': {
      const dests = (spec['destinations'] ?? []) as {
        destination?: { upstream?: { name: string }; kube?: { ref: { name: string } } };
        weight?: number;
      }[];
      return dests.map((d) => `${d.destination?.upstream?.name ?? d.destination?.kube?.ref.name ?? '?'}=${d.weight ?? 1}`).join(',');
    }
    case 'VirtualHostOption':
    case 'RouteOption':
      return `options=${keys(spec['options']).join(',')}`;
    case 'GraphQLApi': {
      const exec = spec['executableSchema'] as
        { executor?: { local?: { resolutions?: unknown }; remote?: { upstreamRef?: { name?: string } } } } | undefined;
      const stitched = spec['stitchedSchema'] as { subschemas?: { name: string }[] } | undefined;
      if (stitched) return `stitched subschemas=${(stitched.subschemas ?? []).map((s) => s.name).join(',') || 'none'}`;
      if (exec?.executor?.remote) return `remote upstream=${exec.executor.remote.upstreamRef?.name ?? '?'}`;
      if (exec?.executor?.local) return `local resolvers=${count(exec.executor.local.resolutions)}`;
      return 'executable';
    }
    case 'GraphQLSchema':
      return `resolvers=${count(spec['resolutions'])}`;
    case 'AuthConfig': {
      const configs = (spec['configs'] ?? []) as Record<string, unknown>[];
      return `steps=${configs.map((c) => keys(c).find((k) => k !== 'name') ?? '?').join(',') || 'none'}`;
    }
    case 'RateLimitConfig': {
      const raw = spec['raw'] as { descriptors?: unknown[]; rateLimits?: unknown[] } | undefined;
      return raw ? `descriptors=${count(raw.descriptors)} rateLimits=${count(raw.rateLimits)}` : keys(spec).join(',');
    }
    case 'Secret': {
      const body = r as { type?: string; data?: unknown; stringData?: unknown };
      return `type=${body.type ?? 'Opaque'} keys=${[...keys(body.data), ...keys(body.stringData)].join(',')}`;
    }
    case 'Proxy': {
      const listeners = (spec['listeners'] ?? []) as { bindPort?: number }[];
      return `listeners=${listeners.map((l) => l.bindPort ?? '?').join(',')}`;
    }
    default:
      return keys(spec).join(',');
  }
}

/** The object as one applies it: no status and none of the fields the server sets. */
export function applyable(r: ListedResource): Record<string, unknown> {
  const { status: _status, ...rest } = r;
  const {
    uid: _uid,
    resourceVersion: _rv,
    generation: _gen,
    creationTimestamp: _ct,
    managedFields: _mf,
    selfLink: _sl,
    ...metadata
  } = r.metadata as Record<string, unknown>;
  return { ...rest, metadata };
}
