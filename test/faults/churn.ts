// What the churn tests share: memory of a component after a forced GC (its admin interface's /debug/gc,
// there when the process runs with --expose-gc), Envoy's served clusters, checks that a group of churn
// resources is served (plain, GraphQL, rate-limited and protected routes), and the figures table.
import http from 'node:http';
import { eventually } from '../support/util.js';
import { CHURN_NAMESPACE } from './churn-resources.js';
import { figure } from './figures.js';

export const CHURN_COUNT = Number(process.env['LEGATE_FAULTS_CHURN_COUNT'] ?? 1000);

export interface Memory {
  heapMiB: number;
  rssMiB: number;
  /** memory of C++ objects bound to JS ones (buffers, compiled regexes' wasm memory) */
  externalMiB: number;
}

const mib = (bytes: number): number => Math.round(bytes / 1024 / 102.4) / 10;

async function gcOnce(port: number): Promise<Memory> {
  const res = await fetch(`http://127.0.0.1:${port}/debug/gc`);
  if (!res.ok) throw new Error(`/debug/gc on ${port}: ${res.status} (is the process started with --expose-gc?)`);
  const { data } = (await res.json()) as { data: { heapUsed: number; rss: number; external: number } };
  return { heapMiB: mib(data.heapUsed), rssMiB: mib(data.rss), externalMiB: mib(data.external) };
}

/**
 * Heap in use and RSS of the component whose admin interface is on `port`, after a full GC: the smaller of two
 * readings a second apart. What a removed resource leaves reachable shows in both; work still in flight when the
 * first was taken (a translation, the last-accepted file's write, an xDS push) shows in one only.
 */
export async function memoryAfterGc(port: number): Promise<Memory> {
  const first = await gcOnce(port);
  await new Promise((r) => setTimeout(r, 1000));
  const second = await gcOnce(port);
  return second.heapMiB <= first.heapMiB ? second : first;
}

/** Envoy's clusters in service (cluster_manager.active_clusters). */
export async function envoyClusters(adminPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/stats?filter=^cluster_manager.active_clusters$`)).text();
  return Number(/active_clusters: (\d+)/.exec(text)?.[1] ?? NaN);
}

export interface Answer {
  status: number;
  body: string;
}

export function get(port: number, path: string, host: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        headers: { host, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', () => resolve({ status: 0, body: '' }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
    req.end(body);
  });
}

/**
 * Whether group `id` is served in full through Envoy: its catch-all route, its GraphQL API (graphql has
 * its config), its protected route with and without its key (extauth has it), its rate-limited route.
 */
export async function groupServed(port: number, round: number, index: number): Promise<boolean> {
  const id = `r${round}-${index}`;
  const host = `${id}.churn.example`;
  if ((await get(port, '/', host)).status !== 200) return false;
  const gql = await get(port, '/graphql', host, {}, JSON.stringify({ query: '{ item { id title } }' }));
  if (gql.status !== 200 || !gql.body.includes(`item ${id}`)) return false;
  const key = `key-${id}-${'k'.repeat(24)}`;
  const guarded = { 'x-churn': `${id}-1` };
  if ((await get(port, '/private', host, guarded)).status !== 401) return false;
  if ((await get(port, '/private', host, { ...guarded, [`x-api-key-${index}`]: key })).status !== 200) return false;
  return (await get(port, '/limited', host)).status === 200;
}

/**
 * One request to each group's GraphQL API, protected route (with its key) and rate-limited route, 8 at a
 * time: every API, AuthConfig and limit is used, so whatever the extensions keep per config is there to
 * be dropped. Returns the groups that did not answer as expected.
 */
export async function useEveryGroup(port: number, round: number, count: number): Promise<string[]> {
  const wrong: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const id = `r${round}-${index}`;
      const host = `${id}.churn.example`;
      const gql = await get(port, '/graphql', host, {}, JSON.stringify({ query: '{ item { id title } }' }));
      const key = { 'x-churn': `${id}-1`, [`x-api-key-${index}`]: `key-${id}-${'k'.repeat(24)}` };
      const auth = await get(port, '/private', host, key);
      const limited = await get(port, '/limited', host);
      if (gql.status !== 200 || auth.status !== 200 || limited.status !== 200)
        wrong.push(`${id}: ${gql.status} ${auth.status} ${limited.status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return wrong;
}

/** Waits until no route of group `id` is served any more (Envoy answers 404 for its domain). */
export async function groupGone(port: number, round: number, index: number, timeoutMs = 120_000): Promise<void> {
  await eventually(
    `r${round}-${index} to be gone`,
    async () => ((await get(port, '/', `r${round}-${index}.churn.example`)).status === 404 ? true : undefined),
    timeoutMs,
  );
}

export interface RoundFigures {
  round: number;
  /** seconds from the first write to the whole round served (first and last group in full) */
  loadS: number;
  /** seconds from the first delete to nothing of the round served */
  removeS: number;
  /** resources the controller listed, and Envoy's clusters, at the round's peak */
  served: string;
  controllerPeakHeapMiB: number;
  controller: Memory;
  extensions: Record<string, Memory>;
  requests: number;
  /** of those, answered on the one retry after Envoy closed their kept-alive connection unanswered (load.ts) */
  retried: number;
  failed: number;
}

/** One figure per round (a row of the table in docs/faults.md) and a summary line. */
export function roundFigure(item: string, f: RoundFigures): void {
  const mem = Object.entries({ controller: f.controller, ...f.extensions })
    .map(([name, m]) => `${name} ${m.heapMiB}/${m.rssMiB}/${m.externalMiB}`)
    .join(', ');
  figure(
    item,
    `round ${f.round}`,
    `load ${f.loadS} s, remove ${f.removeS} s, served ${f.served}, controller heap peak ${f.controllerPeakHeapMiB}, ` +
      `after deletion heap/RSS/external: ${mem} MiB; ` +
      `untouched route ${f.requests} requests (${f.retried} retried on a new connection), ${f.failed} failed`,
  );
}

/** Heaps after each round's deletion within 10% of the first round's (what the churn tests hold to). */
export function heapGrowth(rounds: readonly RoundFigures[], pick: (f: RoundFigures) => Memory): number {
  const first = pick(rounds[0]!).heapMiB;
  return Math.max(...rounds.map((f) => pick(f).heapMiB / first - 1));
}

export { CHURN_NAMESPACE };
