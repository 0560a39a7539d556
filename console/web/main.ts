// The console's pages (Preact + htm, no build-time JSX): hash routes, each page reading the console API.
import { render, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { get, query, type Detail, type HistoryEvent, type Overview, type Ref, type Summary } from './api.js';
import { Dashboard } from './charts.js';
import './style.css';

export const KINDS = [
  'VirtualService',
  'RouteTable',
  'Upstream',
  'UpstreamGroup',
  'AuthConfig',
  'RateLimitConfig',
  'GraphQLApi',
  'Gateway',
  'Proxy',
  'Settings',
] as const;
const STATES = ['Accepted', 'Rejected', 'Warning', 'Pending'];

function plural(kind: string): string {
  return kind === 'Settings' ? kind : kind === 'Proxy' ? 'Proxies' : `${kind}s`;
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/');
  useEffect(() => {
    const on = (): void => setHash(location.hash || '#/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/** Loads `path` (again when it changes); `every` ms: reloads on a timer. */
function useApi<T>(path: string | undefined, every?: number): { data?: T; error?: string } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  useEffect(() => {
    if (!path) return;
    // another path: what the last one answered is not its answer
    setState({});
    let live = true;
    const load = (): void => {
      get<T>(path).then(
        (data) => live && setState({ data }),
        (e: unknown) => live && setState({ error: String(e instanceof Error ? e.message : e) }),
      );
    };
    load();
    const timer = every ? setInterval(load, every) : undefined;
    return () => {
      live = false;
      if (timer) clearInterval(timer);
    };
  }, [path, every]);
  return state;
}

function Badge({ state }: { state: string }) {
  return html`<span class=${`badge ${state.toLowerCase()}`} data-state=${state}>${state}</span>`;
}

function link(r: { kind: string; namespace: string; name: string }): string {
  if (r.kind === 'GraphQLApi') return `#/graphql/${r.namespace}/${r.name}`;
  if (r.kind === 'Upstream') return `#/upstream/${r.namespace}/${r.name}`;
  return `#/r/${r.kind}/${r.namespace}/${r.name}`;
}

function Loading({ error }: { error?: string | undefined }) {
  return error ? html`<p class="error">${error}</p>` : html`<p class="muted">loading…</p>`;
}

const zero = html`<span class="muted">0</span>`;

function OverviewPage() {
  const { data, error } = useApi<Overview>('/api/overview', 5000);
  if (!data) return html`<${Loading} error=${error} />`;
  const components = [
    { name: 'controller', healthy: data.controller.healthy, version: data.controller.version, detail: data.controller.source?.description },
    {
      name: 'envoy',
      healthy: data.envoy.healthy,
      version: /\/(\d+\.\d+\.\d+)\//.exec(data.envoy.version ?? '')?.[1],
      detail: data.envoy.state,
    },
    { name: 'console', healthy: true, version: data.console.version, detail: `charts from ${data.console.metrics}` },
  ];
  return html`
    <h1>Overview</h1>
    <section class="cards">
      ${components.map(
        (c) =>
          html`<div class="card" data-component=${c.name}>
            <h3>${c.name} <span class=${c.healthy ? 'dot ok' : 'dot bad'}></span></h3>
            <div class="muted">${c.version ?? ''}</div>
            <div class="muted small">${c.detail ?? ''}</div>
          </div>`,
      )}
    </section>
    ${
      data.controller.source?.problems.length
        ? html`<div class="error">${data.controller.source.problems.map((p) => html`<div>${p}</div>`)}</div>`
        : null
    }
    <h2>Resources</h2>
    <table class="counts">
      <thead>
        <tr>
          <th>kind</th>
          ${STATES.map((s) => html`<th>${s}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${KINDS.map((k) => {
          const c = data.counts[k] ?? {};
          return html`<tr>
            <td><a href=${`#/list/${k}`}>${k}</a></td>
            ${STATES.map((s) => html`<td>${c[s] ? html`<a href=${`#/list/${k}?state=${s}`}>${c[s]}</a>` : zero}</td>`)}
          </tr>`;
        })}
      </tbody>
    </table>
    <h2>Traffic</h2>
    <${Dashboard} />
    <h2>xDS clients</h2>
    <ul>
      ${data.connections.map((c) => html`<li><code>${c.nodeId}</code> <span class="muted">${c.role} since ${c.connectedAt}</span></li>`)}
    </ul>
  `;
}

function ListPage({ kind, params }: { kind: string; params: URLSearchParams }) {
  const ns = params.get('namespace') ?? '';
  const state = params.get('state') ?? '';
  const { data, error } = useApi<{ namespaces: string[]; items: Summary[] }>(
    `/api/resources${query({ kind, namespace: ns, state })}`,
    5000,
  );
  const set = (k: string, v: string): void => {
    const p = new URLSearchParams(params);
    if (v) p.set(k, v);
    else p.delete(k);
    location.hash = `#/list/${kind}${p.toString() ? `?${p}` : ''}`;
  };
  return html`
    <h1>${plural(kind)}</h1>
    <div class="filters">
      <label
        >namespace
        <select id="filter-namespace" value=${ns} onChange=${(e: Event) => set('namespace', (e.target as HTMLSelectElement).value)}>
          <option value="">all</option>
          ${(data?.namespaces ?? (ns ? [ns] : [])).map((n) => html`<option value=${n}>${n}</option>`)}
        </select></label
      >
      <label
        >state
        <select id="filter-state" value=${state} onChange=${(e: Event) => set('state', (e.target as HTMLSelectElement).value)}>
          <option value="">all</option>
          ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label
      >
    </div>
    ${
      !data
        ? html`<${Loading} error=${error} />`
        : html`<table class="list" data-kind=${kind}>
              <thead>
                <tr>
                  <th>namespace</th>
                  <th>name</th>
                  <th>state</th>
                  <th>reason</th>
                </tr>
              </thead>
              <tbody>
                ${data.items.map(
                  (r) =>
                    html`<tr data-name=${r.name}>
                      <td>${r.namespace}</td>
                      <td><a href=${link(r)}>${r.name}</a></td>
                      <td><${Badge} state=${r.state} /></td>
                      <td class="reason">${r.reason ?? ''}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
            ${data.items.length === 0 ? html`<p class="muted">none</p>` : null}`
    }
  `;
}

function Refs({ title, refs }: { title: string; refs: Ref[] }) {
  return html`<div>
    <h3>${title}</h3>
    ${
      refs.length === 0
        ? html`<p class="muted">none</p>`
        : html`<ul class="refs">
            ${refs.map(
              (r) =>
                html`<li>
                  ${r.kind}
                  <a href=${link(r)}>${r.namespace}.${r.name}</a>${r.missing ? html` <span class="badge rejected">missing</span>` : null}
                </li>`,
            )}
          </ul>`
    }
  </div>`;
}

function Timeline({ events }: { events: HistoryEvent[] }) {
  if (events.length === 0) return html`<p class="muted">no changes since the controller started</p>`;
  return html`<table class="timeline">
    <tbody>
      ${[...events].reverse().map(
        (e) =>
          html`<tr>
            <td class="muted">${new Date(e.at).toLocaleString()}</td>
            <td>${e.kind} <a href=${link(e)}>${e.namespace}.${e.name}</a></td>
            <td>${e.change}</td>
            <td><${Badge} state=${e.state} /></td>
            <td class="reason">${e.reason ?? ''}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function detailPath(kind: string, ns: string, name: string): string {
  return `/api/resource${query({ kind, namespace: ns, name })}`;
}

function ResourceHeader({ d }: { d: Detail }) {
  const yamlUrl = `/api/resource.yaml${query({ kind: d.kind, namespace: d.namespace, name: d.name })}`;
  return html`
    <h1>${d.kind} <span class="muted">${d.namespace}.</span>${d.name}</h1>
    <p><${Badge} state=${d.state} /> <span class="reason" id="reason">${d.reason ?? ''}</span></p>
    <p><a href=${yamlUrl} download>download YAML</a></p>
  `;
}

function ResourcePage({ kind, ns, name }: { kind: string; ns: string; name: string }) {
  const { data, error } = useApi<Detail>(detailPath(kind, ns, name), 5000);
  if (!data) return html`<${Loading} error=${error} />`;
  return html`
    <${ResourceHeader} d=${data} />
    <div class="cols">
      <${Refs} title="References" refs=${data.references} />
      <${Refs} title="Referenced by" refs=${data.referencedBy} />
    </div>
    <h3>YAML</h3>
    <pre class="yaml">${data.yaml}</pre>
    <h3>Timeline</h3>
    <${Timeline} events=${data.history} />
  `;
}

type ExplorerModule = typeof import('./graphiql.js');
let explorerLoad: Promise<ExplorerModule> | undefined;

/** GraphiQL (React, ~2 MB) is a chunk of its own, loaded with its stylesheet the first time an explorer opens. */
function loadExplorer(): Promise<ExplorerModule> {
  if (!explorerLoad) {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = 'explorer.css';
    document.head.append(css);
    const url = new URL('explorer.js', document.baseURI).href;
    explorerLoad = import(/* @vite-ignore */ url) as Promise<ExplorerModule>;
  }
  return explorerLoad;
}

function Explorer({ host, path, initial }: { host: string; path: string; initial: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let unmount: (() => void) | undefined;
    let live = true;
    loadExplorer().then(
      (m) => {
        if (live && ref.current) unmount = m.mountGraphiQL(ref.current, `/gw${query({ host, path })}`, initial);
      },
      (e: unknown) => setError(String(e)),
    );
    return () => {
      live = false;
      unmount?.();
    };
  }, [host, path, initial]);
  return html`${error ? html`<p class="error">${error}</p>` : null}
    <div class="explorer" ref=${ref}></div>`;
}

function GraphqlPage({ ns, name, initial }: { ns: string; name: string; initial: string }) {
  const { data, error } = useApi<Detail>(detailPath('GraphQLApi', ns, name));
  const [endpoint, setEndpoint] = useState(0);
  if (!data) return html`<${Loading} error=${error} />`;
  const spec = (data.resource.spec ?? {}) as {
    executableSchema?: { schemaDefinition?: string; executor?: { local?: { resolutions?: Record<string, unknown> } } };
    stitchedSchema?: unknown;
  };
  const resolutions = spec.executableSchema?.executor?.local?.resolutions ?? {};
  const endpoints = data.endpoints ?? [];
  const ep = endpoints[endpoint];
  return html`
    <${ResourceHeader} d=${data} />
    <h3>Explorer</h3>
    ${
      data.explorerDisabled
        ? html`<p class="muted">${data.explorerDisabled}</p>`
        : ep
          ? html`<p>
                ${
                  endpoints.length > 1
                    ? html`<select onChange=${(e: Event) => setEndpoint(Number((e.target as HTMLSelectElement).value))}>
                        ${endpoints.map((x, i) => html`<option value=${i}>${x.host || '*'}${x.path} (${x.via})</option>`)}
                      </select>`
                    : html`<span class="muted">queries go to the gateway: ${ep.host || '*'}${ep.path} (${ep.via})</span>`
                }
              </p>
              <${Explorer} host=${ep.host} path=${ep.path} initial=${initial} />`
          : html`<p class="muted">no route serves this API yet (a route's graphqlApiRef names it)</p>`
    }
    <div class="cols">
      <div>
        <h3>Schema</h3>
        <pre class="yaml" id="schema">${spec.executableSchema?.schemaDefinition ?? '(stitched schema)'}</pre>
      </div>
      <div>
        <h3>Resolvers</h3>
        <table class="list">
          <tbody>
            ${Object.entries(resolutions).map(
              ([k, v]) =>
                html`<tr>
                  <td><code>${k}</code></td>
                  <td><code class="small">${JSON.stringify(v)}</code></td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </div>
    <div class="cols">
      <${Refs} title="References" refs=${data.references} />
      <${Refs} title="Referenced by" refs=${data.referencedBy} />
    </div>
  `;
}

function UpstreamPage({ ns, name }: { ns: string; name: string }) {
  const { data, error } = useApi<Detail>(detailPath('Upstream', ns, name), 5000);
  if (!data) return html`<${Loading} error=${error} />`;
  return html`
    <${ResourceHeader} d=${data} />
    <h3>Traffic</h3>
    <${Dashboard} upstream=${`${ns}/${name}`} />
    <div class="cols">
      <${Refs} title="References" refs=${data.references} />
      <${Refs} title="Referenced by" refs=${data.referencedBy} />
    </div>
    <h3>YAML</h3>
    <pre class="yaml">${data.yaml}</pre>
    <h3>Timeline</h3>
    <${Timeline} events=${data.history} />
  `;
}

interface RouteTestResult {
  match?: {
    listener: string;
    virtualHost: string;
    source: Ref;
    route: string;
    action: string;
    clusters: { cluster: string; weight: number }[];
  };
  listeners: {
    name: string;
    port: number;
    matched: boolean;
    why?: string;
    virtualHosts: {
      name: string;
      domains: string[];
      matched: boolean;
      why?: string;
      routes: { name: string; matched: boolean; why: string[] }[];
    }[];
  }[];
}

function RouteTesterPage() {
  const [form, setForm] = useState({ method: 'GET', host: 'localhost', path: '/', headers: '', port: '' });
  const [result, setResult] = useState<RouteTestResult>();
  const [error, setError] = useState<string>();
  const run = (e: Event): void => {
    e.preventDefault();
    const q = new URLSearchParams({ method: form.method, host: form.host, path: form.path });
    if (form.port) q.set('port', form.port);
    for (const line of form.headers.split('\n')) if (line.trim()) q.append('header', line.trim());
    get<RouteTestResult>(`/api/routetest?${q}`).then(
      (r) => (setResult(r), setError(undefined)),
      (err: unknown) => setError(String(err)),
    );
  };
  const field = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  return html`
    <h1>Route tester</h1>
    <p class="muted">Which listener, virtual host and route take a request, computed from the configuration the controller serves.</p>
    <form class="routetest" onSubmit=${run}>
      <select id="rt-method" value=${form.method} onChange=${field('method')}>
        ${['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'CONNECT'].map((m) => html`<option>${m}</option>`)}
      </select>
      <input id="rt-host" placeholder="host" value=${form.host} onInput=${field('host')} />
      <input id="rt-path" placeholder="/path?query" value=${form.path} onInput=${field('path')} />
      <input id="rt-port" placeholder="port (any)" size="8" value=${form.port} onInput=${field('port')} />
      <textarea id="rt-headers" placeholder="name: value, one a line" rows="2" onInput=${field('headers')}>${form.headers}</textarea>
      <button id="rt-run" type="submit">Test</button>
    </form>
    ${error ? html`<p class="error">${error}</p>` : null}
    ${
      result
        ? html`<div id="rt-result">
            ${
              result.match
                ? html`<div class="match">
                    <b>Matched</b>: listener <code>${result.match.listener}</code>, virtual host
                    <code>${result.match.virtualHost}</code> (<a href=${link(result.match.source)}
                      >${result.match.source.kind} ${result.match.source.namespace}.${result.match.source.name}</a
                    >), route <code id="rt-route">${result.match.route}</code> → <span id="rt-action">${result.match.action}</span>
                  </div>`
                : html`<div class="error" id="rt-nomatch">No route matches: Envoy answers 404.</div>`
            }
            ${result.listeners.map(
              (l) =>
                html`<div class="listener">
                  <h3>${l.matched ? '✔' : '✘'} listener ${l.name} :${l.port} <span class="muted">${l.why ?? ''}</span></h3>
                  ${l.virtualHosts.map(
                    (v) =>
                      html`<div class="vhost">
                        <b>${v.matched ? '✔' : '✘'} ${v.name}</b> <span class="muted">[${v.domains.join(', ')}] ${v.why ?? ''}</span>
                        <ol>
                          ${v.routes.map(
                            (r) =>
                              html`<li class=${r.matched ? 'matched' : ''}>
                                <code>${r.name}</code>
                                ${r.matched ? html`<b>matches</b>` : html`<span class="muted">${r.why.join('; ')}</span>`}
                              </li>`,
                          )}
                        </ol>
                      </div>`,
                  )}
                </div>`,
            )}
          </div>`
        : null
    }
  `;
}

interface Served {
  envoy: string;
  roles: {
    role: string;
    connections: {
      nodeId: string;
      types: Record<
        string,
        { sentVersion: string | null; ackedVersion: string | null; lastNack: { version: string; message: string } | null }
      >;
    }[];
    types: {
      type: string;
      desired: number;
      held?: number;
      missing?: string[];
      extra?: string[];
      errors?: { name: string; details: string }[];
      versions?: string[];
    }[];
  }[];
}

function ServedPage() {
  const { data, error } = useApi<Served>('/api/served', 5000);
  if (!data) return html`<${Loading} error=${error} />`;
  return html`
    <h1>Served vs desired</h1>
    <p class="muted">What the controller serves each xDS client, against what the Envoy holds (its config_dump: ${data.envoy}).</p>
    ${data.roles.map(
      (r) =>
        html`<section class="role">
          <h2>${r.role}</h2>
          ${
            r.connections.length === 0
              ? html`<p class="error">no client connected with this role</p>`
              : html`<p class="muted small">${r.connections.map((c) => c.nodeId).join(', ')}</p>`
          }
          ${r.types.length === 0 ? html`<p class="muted">nothing served to this role (no resource needs it)</p>` : null}
          <table class="list">
            <thead>
              <tr>
                <th>type</th>
                <th>desired</th>
                <th>Envoy holds</th>
                <th>sent / acked version</th>
                <th>Envoy's version</th>
                <th>NACK</th>
                <th>differences</th>
              </tr>
            </thead>
            <tbody>
              ${r.types.map((t) => {
                const conn = r.connections[0]?.types[t.type];
                const diff = [
                  ...(t.missing ?? []).map((n) => `missing in Envoy: ${n}`),
                  ...(t.extra ?? []).map((n) => `only in Envoy: ${n}`),
                  ...(t.errors ?? []).map((x) => `${x.name}: ${x.details}`),
                ];
                return html`<tr>
                  <td>${t.type}</td>
                  <td>${t.desired}</td>
                  <td>${t.held ?? html`<span class="muted">–</span>`}</td>
                  <td>${conn ? `${conn.sentVersion ?? '–'} / ${conn.ackedVersion ?? '–'}` : '–'}</td>
                  <td>${t.versions?.join(', ') ?? ''}</td>
                  <td class="reason">${conn?.lastNack ? html`<span class="badge rejected">NACK</span> ${conn.lastNack.message}` : ''}</td>
                  <td class="reason">${diff.length ? diff.join('; ') : t.held !== undefined ? 'in sync' : ''}</td>
                </tr>`;
              })}
            </tbody>
          </table>
        </section>`,
    )}
  `;
}

function TimelinePage() {
  const { data, error } = useApi<HistoryEvent[]>('/api/history', 5000);
  if (!data) return html`<${Loading} error=${error} />`;
  return html`<h1>Timeline</h1>
    <${Timeline} events=${data} />`;
}

function Nav({ hash }: { hash: string }) {
  const item = (href: string, label: string): ComponentChildren =>
    html`<a class=${hash === href || (href !== '#/' && hash.startsWith(href)) ? 'active' : ''} href=${href}>${label}</a>`;
  return html`<nav>
    <div class="brand">Legate</div>
    ${item('#/', 'Overview')} ${KINDS.map((k) => item(`#/list/${k}`, plural(k)))} ${item('#/routes', 'Route tester')}
    ${item('#/served', 'Served vs desired')} ${item('#/timeline', 'Timeline')}
  </nav>`;
}

function App() {
  const hash = useHash();
  const [route = '', search = ''] = hash.slice(1).split('?');
  const parts = route.split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(search);
  let page: ComponentChildren;
  if (parts[0] === 'list' && parts[1]) page = html`<${ListPage} key=${parts[1]} kind=${parts[1]} params=${params} />`;
  else if (parts[0] === 'r' && parts.length === 4) page = html`<${ResourcePage} kind=${parts[1]} ns=${parts[2]} name=${parts[3]} />`;
  else if (parts[0] === 'graphql' && parts.length === 3)
    page = html`<${GraphqlPage} ns=${parts[1]} name=${parts[2]} initial=${params.get('query') ?? '{\n  __typename\n}\n'} />`;
  else if (parts[0] === 'upstream' && parts.length === 3) page = html`<${UpstreamPage} ns=${parts[1]} name=${parts[2]} />`;
  else if (parts[0] === 'routes') page = html`<${RouteTesterPage} />`;
  else if (parts[0] === 'served') page = html`<${ServedPage} />`;
  else if (parts[0] === 'timeline') page = html`<${TimelinePage} />`;
  else page = html`<${OverviewPage} />`;
  return html`<${Nav} hash=${hash} />
    <main>${page}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
