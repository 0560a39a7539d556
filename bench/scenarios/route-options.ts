// Everyday Gloo route options on the hot path. One `legate run` with two VirtualServices to the shared
// upstream: `plain.bench` (routes without options) and `rich.bench`, whose virtual host and every route
// carry CORS, header manipulation and a host rewrite, as a Gloo user writes them. The load sends an
// Origin header the CORS policy allows, so every request goes through the policy and gets its headers.
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { toUpstream, upstreamYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadScenario } from '../lib/types.js';

const ROUTE_COUNT = 10;
const ORIGIN = 'https://app.example.com';

const routes = (rich: boolean): string =>
  Array.from({ length: ROUTE_COUNT }, (_, i) => {
    const prefix = i === ROUTE_COUNT - 1 ? '/' : `/r${i}`;
    const options = rich
      ? `
        options:
          hostRewrite: backend.internal
          cors: { allowOrigin: ['${ORIGIN}'], allowCredentials: true, exposeHeaders: [x-route] }
          headerManipulation:
            requestHeadersToAdd: [{ header: { key: x-route, value: r${i} }, append: false }]
            requestHeadersToRemove: [x-debug]
            responseHeadersToAdd: [{ header: { key: x-route, value: r${i} } }]`
      : '';
    return `      - matchers: [{ prefix: '${prefix}' }]
        ${toUpstream()}${options}`;
  }).join('\n');

const vs = (name: string, rich: boolean): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${name}.bench]
${
  rich
    ? `    options:
      cors:
        allowOrigin: ['${ORIGIN}']
        allowMethods: [GET, POST, PUT]
        allowHeaders: [content-type, authorization]
        maxAge: 1d
      headerManipulation:
        requestHeadersToAdd: [{ header: { key: x-gateway, value: legate } }]
        responseHeadersToAdd: [{ header: { key: x-served-by, value: legate } }]
        responseHeadersToRemove: [x-powered-by]
`
    : ''
}    routes:
${routes(rich)}
`;

function gateway(ctx: BenchContext): Promise<{ value: Legate; release(): Promise<void> }> {
  return acquire(ctx, 'route-options-gateway', async () => {
    const up = await ctx.upstream();
    const files = { 'upstream.yaml': upstreamYaml(up.port), 'plain.yaml': vs('plain', false), 'rich.yaml': vs('rich', true) };
    const gw = await startLegate(ctx, 'route-options', files, ctx.settings.serverCpus);
    try {
      for (const host of ['plain.bench', 'rich.bench'])
        await untilServed(gw.ports.http, '/bench', host, up.body, 30_000, 100, () => (gw.proc.alive() ? undefined : 'legate run exited'));
      return gw;
    } catch (err) {
      await gw.stop();
      throw err;
    }
  });
}

function loadScenario(name: string, host: string, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    ...(aim !== undefined ? { compareTo: ['route-options-plain'], aims: { 'route-options-plain': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const gw = await gateway(ctx);
      return {
        port: gw.value.ports.http,
        path: '/bench',
        host,
        request: { headers: { origin: ORIGIN } },
        processes: [...legateProcesses(gw.value), { label: 'upstream', role: 'upstream', pid: up.pid }],
        stop: () => gw.release(),
      };
    },
  };
}

export const routeOptionsPlain = loadScenario('route-options-plain', 'plain.bench', 'a VirtualService whose routes have no options');
export const routeOptionsRich = loadScenario(
  'route-options-rich',
  'rich.bench',
  'a VirtualService with CORS and header manipulation on its virtual host, and CORS, header manipulation and a host rewrite ' +
    'on every route (an allowed Origin on every request)',
  0.9,
);
