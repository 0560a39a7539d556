// Item 4: ~1,000 malformed or hostile resource documents written into a running gateway's watched
// directory, 100 files at a time. Each is refused with a reason (a Rejected status, or a load error of
// its file), a known-good route serves throughout, the controller never restarts, and its memory
// stays bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { figure } from './figures.js';
import { GOOD_DOMAIN, hostileDocuments, type HostileDocument, type Outcome } from './hostile-resources.js';
import { byStatus, startLoad } from './load.js';
import { componentPid, rssMiB } from './procs.js';

const ITEM = 'resource-fuzz';
const COUNT = Number(process.env['LEGATE_FAULTS_FUZZ_COUNT'] ?? 1000);
const BATCH = 100;

let gw: Gateway;
let app: EchoUpstream;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway(
    {
      'good.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: good, namespace: default }
spec:
  virtualHost:
    domains: ['${GOOD_DOMAIN}']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`,
    },
    { env: { START_STATS_SERVER: '1' } },
  );
  await gw.until('/ok', (r) => r.status === 200, { host: GOOD_DOMAIN }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

async function heapUsedMiB(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.controllerStats}/metrics`)).text();
  const bytes = Number(/^legate_controller_nodejs_heap_size_used_bytes (\d+)/m.exec(text)?.[1]);
  return Math.round(bytes / 1024 / 102.4) / 10;
}

interface ApiStatus {
  kind: string;
  metadata: { name: string; namespace: string };
  status: { statuses: Record<string, { state: string; reason?: string }> };
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${gw.ports.api}${path}`);
  return ((await res.json()) as { data: T }).data;
}

/** What became of each document of the batch, once every one is accounted for. */
async function outcomes(batch: readonly HostileDocument[]): Promise<Map<HostileDocument, { outcome: Outcome; reason: string }>> {
  return eventually(
    'the controller to account for every document of the batch',
    async () => {
      const errors = await api<{ origin: string; message: string }[]>('/api/v1/errors');
      const errorOf = new Map(errors.map((e) => [e.origin.split('#')[0]!, e.message]));
      const resources = await api<ApiStatus[]>('/api/v1/resources');
      const statusOf = new Map(
        resources.map((r) => [`${r.kind}/${r.metadata.namespace}/${r.metadata.name}`, Object.values(r.status.statuses)[0]]),
      );
      const out = new Map<HostileDocument, { outcome: Outcome; reason: string }>();
      for (const d of batch) {
        const status = d.resource ? statusOf.get(`${d.resource.kind}/${d.resource.namespace}/${d.resource.name}`) : undefined;
        const error = errorOf.get(d.file);
        if (status && (status.state === 'Rejected' || status.state === 'Accepted' || status.state === 'Warning'))
          out.set(d, { outcome: status.state, reason: status.reason ?? '' });
        else if (error) out.set(d, { outcome: 'load error', reason: error });
        else return undefined;
      }
      return out;
    },
    90_000,
  );
}

describe('resource fuzz', () => {
  it(`refuses ${COUNT} hostile documents with a reason while a good route keeps serving, with bounded memory`, async () => {
    const docs = hostileDocuments(COUNT);
    const pid = componentPid(gw, 'controller')!;
    const rssBefore = rssMiB(pid);
    const heapBefore = await heapUsedMiB();
    let rssMax = rssBefore;
    const load = startLoad({ port: gw.ports.http, path: '/ok', host: GOOD_DOMAIN }, { connections: 2, maxMs: 300_000 });
    const wrong: string[] = [];
    const byOutcome: Record<string, number> = {};
    const batchMs: number[] = [];
    const rssAfterBatch: number[] = [];
    for (let i = 0; i < docs.length; i += BATCH) {
      const batch = docs.slice(i, i + BATCH);
      const t = performance.now();
      for (const d of batch) gw.write(d.file, d.text);
      const seen = await outcomes(batch);
      batchMs.push(Math.round(performance.now() - t));
      for (const [d, { outcome, reason }] of seen) {
        byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
        if (!d.expect.includes(outcome) || (outcome !== 'Accepted' && !reason))
          wrong.push(`${d.file}: ${outcome} (${reason.slice(0, 200)})`);
      }
      rssMax = Math.max(rssMax, rssMiB(pid));
      rssAfterBatch.push(rssMiB(pid));
      for (const d of batch) gw.remove(d.file);
    }
    // everything removed: the controller settles back
    await eventually(
      'the fuzzed resources to be gone',
      async () => ((await api<unknown[]>('/api/v1/errors')).length === 0 ? true : undefined),
      30_000,
    );
    const samples = await load.stop();
    const rssAfter = rssMiB(pid);
    const heapAfter = await heapUsedMiB();
    const failed = samples.filter((s) => s.status !== 200);

    figure(ITEM, 'documents', docs.length);
    figure(ITEM, 'outcomes', JSON.stringify(byOutcome));
    figure(ITEM, 'documents without the expected outcome and a reason', wrong.length);
    figure(ITEM, 'each batch of 100 accounted for after', batchMs.join(', '), 'ms');
    figure(ITEM, 'controller RSS after each batch', rssAfterBatch.join(', '), 'MiB');
    figure(ITEM, 'good route: requests / failed', `${samples.length} / ${failed.length}`);
    figure(ITEM, 'controller RSS before / max / after', `${rssBefore} / ${rssMax} / ${rssAfter}`, 'MiB');
    figure(ITEM, 'controller heap used before / after (fuzzed files removed)', `${heapBefore} / ${heapAfter}`, 'MiB');
    expect(wrong).toEqual([]);
    expect(byStatus(failed)).toEqual({});
    expect(componentPid(gw, 'controller')).toBe(pid);
    expect(rssMax).toBeLessThan(1024);
    expect((await gw.request('/ok', { host: GOOD_DOMAIN })).status).toBe(200);
  });
});
