// The web console in a real browser (Debian's chromium through playwright-core) on a running gateway:
// find a rejected VirtualService's reason, run the route tester and a GraphQL query, watch a chart move
// under load. LEGATE_CONSOLE_SCREENSHOTS=1 writes each page's screenshot to docs/console/.
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserPath, launchBrowser } from '../support/browser.js';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

const SCREENSHOTS = process.env['LEGATE_CONSOLE_SCREENSHOTS'] === '1';
const SECRET_VALUE = 's3cr3t-client-value-never-shown';

let gw: Gateway;
let echo: EchoUpstream;
let browser: Browser;
let page: Page;
let base: string;

const resources = (port: number): Record<string, string> => ({
  'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: echo, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`,
  'shop.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: [shop.example.com]
    routes:
      - matchers: [{ prefix: /admin, headers: [{ name: x-admin, value: "yes" }] }]
        directResponseAction: { status: 403, body: admins }
      - matchers: [{ prefix: /api, methods: [GET] }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: hello, namespace: gloo-system }
`,
  'broken.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: broken, namespace: team-b }
spec:
  virtualHost:
    domains: [broken.example.com]
    routes:
      - matchers: [{ regex: '/items/[0-9+' }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
`,
  'graphql.yaml': `
apiVersion: graphql.gloo.solo.io/v1beta1
kind: GraphQLApi
metadata: { name: hello, namespace: gloo-system }
spec:
  executableSchema:
    executor:
      local:
        enableIntrospection: true
        resolutions:
          Query|hello: { mockResolver: { syncResponse: world } }
    schemaDefinition: 'type Query { hello: String @resolve(name: "Query|hello") }'
`,
  'secret.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: oauth, namespace: gloo-system }
type: Opaque
stringData: { client-secret: ${SECRET_VALUE} }
`,
});

async function shot(name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  const dir = path.join(ROOT, 'docs', 'console');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

describe.skipIf(browserPath() === undefined)('console', () => {
  beforeAll(async () => {
    echo = await startEcho('echo');
    const consolePort = await freePort();
    gw = await startGateway(resources(echo.port), { args: ['--console-port', String(consolePort)] });
    base = `http://127.0.0.1:${consolePort}/`;
    await eventually(
      'the console to answer',
      async () => ((await fetch(`${base}api/overview`).catch(() => undefined))?.ok ? true : undefined),
      30_000,
    );
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
    await echo?.close();
  });

  it('shows the overview with components and counts', async () => {
    await page.goto(base);
    await page.waitForSelector('[data-component=controller] .dot.ok');
    await page.waitForSelector('[data-component=envoy] .dot.ok', { timeout: 20_000 });
    // legatectl check counts the console among the run's components (it is up)
    expect(gw.ctl('check').stdout).toContain('Checking Deployments... OK');
    const counts = await page.textContent('table.counts');
    expect(counts).toContain('VirtualService');
    if (SCREENSHOTS) {
      // some traffic on the gateway's charts for the picture
      for (let i = 0; i < 4; i++) {
        await Promise.all(Array.from({ length: 50 }, () => gw.request('/api/x', { headers: { host: 'shop.example.com' } })));
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    await shot('overview');
  });

  it('filters to a Rejected VirtualService and shows its reason', async () => {
    await page.goto(`${base}#/list/VirtualService`);
    await page.waitForSelector('table.list tr[data-name=shop]');
    await page.selectOption('#filter-state', 'Rejected');
    await page.waitForSelector('table.list tr[data-name=shop]', { state: 'detached' });
    await page.waitForSelector('table.list tr[data-name=broken]');
    expect(await page.locator('table.list tbody tr').count()).toBe(1);
    const reason = await page.textContent('table.list tr[data-name=broken] td.reason');
    expect(reason).toMatch(/invalid regex/);
    await shot('virtualservices-rejected');
    await page.click('table.list tr[data-name=broken] a');
    await page.waitForSelector('#reason');
    expect(await page.textContent('#reason')).toMatch(/invalid regex/);
    expect(await page.textContent('pre.yaml')).toContain('broken.example.com');
    expect(await page.textContent('table.timeline')).toContain('added');
    await page.goto(`${base}#/upstream/gloo-system/echo`);
    await page.waitForSelector('ul.refs');
    expect(await page.textContent('main')).toContain('default.shop');
  });

  it('never shows a secret value', async () => {
    for (const p of ['api/resources', 'api/resource?kind=Secret&namespace=gloo-system&name=oauth', 'api/served', 'api/overview']) {
      const text = await (await fetch(`${base}${p}`)).text();
      expect(text, p).not.toContain(SECRET_VALUE);
    }
    const yaml = await (await fetch(`${base}api/resource.yaml?kind=Secret&namespace=gloo-system&name=oauth`)).text();
    expect(yaml).toContain('client-secret');
    expect(yaml).not.toContain(SECRET_VALUE);
  });

  it('runs the route tester', async () => {
    await page.goto(`${base}#/routes`);
    await page.fill('#rt-host', 'shop.example.com:8080');
    await page.fill('#rt-path', '/api/items?x=1');
    await page.click('#rt-run');
    await page.waitForSelector('#rt-route');
    expect(await page.textContent('#rt-action')).toContain('echo_gloo-system');
    const text = (await page.textContent('#rt-result')) ?? '';
    // the route before it did not match, and says why
    expect(text).toContain('path /api/items does not start with /admin');
    await shot('route-tester');
    await page.selectOption('#rt-method', 'POST');
    await page.click('#rt-run');
    await page.waitForSelector('#rt-nomatch');
    expect(await page.textContent('#rt-result')).toContain('method POST is not one of GET');
  });

  it('runs a GraphQL query in the explorer', async () => {
    await page.goto(`${base}#/graphql/gloo-system/hello?query=${encodeURIComponent('{ hello }')}`);
    await page.waitForSelector('#schema');
    expect(await page.textContent('#schema')).toContain('type Query');
    await page.waitForSelector('.graphiql-execute-button', { timeout: 30_000 });
    await eventually(
      'the explorer to answer',
      async () => {
        await page.click('.graphiql-execute-button');
        const out =
          (await page
            .locator('.result-window')
            .textContent({ timeout: 2000 })
            .catch(() => '')) ?? '';
        return out.includes('world') ? out : undefined;
      },
      30_000,
    );
    await shot('graphql');
  });

  it("moves an Upstream's chart while load runs", async () => {
    await page.goto(`${base}#/upstream/gloo-system/echo`);
    await page.waitForSelector('[data-chart=requests]');
    let running = true;
    const load = (async () => {
      while (running) await gw.request('/api/x', { headers: { host: 'shop.example.com' } }).catch(() => undefined);
    })();
    try {
      await eventually(
        'the requests/s series to rise',
        async () => {
          const v = Number(await page.getAttribute('[data-chart=requests] [data-series="requests/s"]', 'data-value'));
          return v > 0 ? v : undefined;
        },
        40_000,
      );
      // a few more points for the picture
      if (SCREENSHOTS) await new Promise((r) => setTimeout(r, 8000));
      const points = Number(await page.getAttribute('[data-chart=requests]', 'data-points'));
      expect(points).toBeGreaterThan(1);
      await shot('upstream-charts');
    } finally {
      running = false;
      await load;
    }
  });

  it('shows served vs desired and the timeline', async () => {
    await page.goto(`${base}#/served`);
    await page.waitForSelector('section.role');
    const text = (await page.textContent('main')) ?? '';
    expect(text).toContain('gateway-proxy');
    expect(text).toContain('in sync');
    await shot('served');
    // a resource accepted, then broken: its timeline says when and why
    const flaky = (prefix: string): string => `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: flaky, namespace: default }
spec:
  virtualHost:
    domains: [flaky.example.com]
    routes:
      - matchers: [{ ${prefix} }]
        directResponseAction: { status: 200, body: ok }
`;
    gw.write('flaky.yaml', flaky('prefix: /'));
    await gw.until('/', (r) => r.status === 200, { headers: { host: 'flaky.example.com' } });
    gw.write('flaky.yaml', flaky("regex: '(unclosed'"));
    await page.goto(`${base}#/r/VirtualService/default/flaky`);
    await eventually(
      'the timeline to show the rejection',
      async () => ((await page.textContent('table.timeline').catch(() => '')) ?? '').includes('Rejected') || undefined,
      30_000,
    );
    const timeline = (await page.textContent('table.timeline')) ?? '';
    expect(timeline).toContain('added');
    expect(timeline).toMatch(/spec\s*Rejected/);
    await page.goto(`${base}#/timeline`);
    await page.waitForSelector('table.timeline');
    expect(await page.textContent('table.timeline')).toContain('broken');
    await shot('timeline');
  });

  it('loads at 1,000 VirtualServices (time to interactive) and answers its API quickly', async () => {
    const many = Array.from(
      { length: 1000 },
      (_, i) => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: vs-${i}, namespace: bulk }
spec:
  virtualHost:
    domains: [vs-${i}.example.com]
    routes:
      - matchers: [{ prefix: /${i} }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
`,
    ).join('---\n');
    gw.write('many.yaml', many);
    await eventually(
      'the controller to list 1,000 more',
      async () => {
        const r = (await (await fetch(`${base}api/resources?kind=VirtualService&namespace=bulk`)).json()) as { data: { items: unknown[] } };
        return r.data.items.length === 1000 ? true : undefined;
      },
      120_000,
    );
    // the other tab polls nothing meanwhile
    await page.goto('about:blank');
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const ttis: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await fresh.goto(`${base}?n=${i}#/list/VirtualService`);
      await fresh.waitForSelector('table.list tr[data-name=vs-999]', { timeout: 30_000 });
      ttis.push(performance.now() - started);
    }
    await fresh.close();
    const times: Record<string, number[]> = {};
    for (const p of ['api/overview', 'api/resources?kind=VirtualService', 'api/resource?kind=VirtualService&namespace=bulk&name=vs-500']) {
      const list: number[] = (times[p] = []);
      for (let i = 0; i < 100; i++) {
        const started = performance.now();
        const res = await fetch(`${base}${p}`);
        await res.arrayBuffer();
        list.push(performance.now() - started);
      }
    }
    const p99 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]!;
    const figures = {
      ttiMs: ttis.map(Math.round),
      apiP99Ms: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(p99(v))])),
    };
    console.log(`console at 1,000 VirtualServices: ${JSON.stringify(figures)}`);
    expect(Math.min(...ttis)).toBeLessThan(10_000);
  }, 240_000);
});
