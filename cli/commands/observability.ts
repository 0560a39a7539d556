// `legate observability`: Gloo Enterprise's observability deployment. Reads the Upstreams and the Settings from the
// controller's API, and keeps one Grafana dashboard per Upstream plus the whole-gateway one: written as Grafana JSON
// to a directory and/or pushed to a Grafana (Settings observabilityOptions.grafanaIntegration shapes them).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Logger } from '../../common/log.js';
import type { Generated, ListedSettings, ListedUpstream } from '../../controller/observability/generate.js';
import { UsageError, command, type FlagValues } from '../flags.js';
import { DEFAULTS, LOG_LEVEL_FLAG, componentLogger, waitForSignal } from './common.js';

const MANIFEST = '.legate-dashboards.json';

const flags = {
  controller: {
    type: 'string',
    default: `http://127.0.0.1:${DEFAULTS.apiPort}`,
    placeholder: 'URL',
    description: "the controller's API, where the Upstreams and the Settings are read",
  },
  out: { type: 'string', placeholder: 'DIR', description: 'write the dashboards into DIR as Grafana JSON (<uid>.json)' },
  'grafana-url': {
    type: 'string',
    placeholder: 'URL',
    description: 'push the dashboards to this Grafana (token: GRAFANA_API_KEY, or user:password in the URL)',
  },
  interval: { type: 'int', default: 10, min: 1, max: 3600, description: 'seconds between reads of the controller API' },
  once: { type: 'boolean', description: 'generate once and exit (1 if the controller cannot be read or a query is refused)' },
  'check-queries': {
    type: 'string',
    placeholder: 'URL',
    description: "check every panel's PromQL with this Prometheus (its /api/v1/query) before writing",
  },
  host: { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address of the --port server' },
  port: { type: 'int', default: 0, min: 0, max: 65535, description: 'serve /healthz and /dashboards on this port (0: none)' },
  'log-level': LOG_LEVEL_FLAG,
} as const;

interface Envelope<T> {
  status: string;
  data?: T;
  error?: string;
}

async function api<T>(base: string, pathAndQuery: string): Promise<T> {
  const res = await fetch(`${base}${pathAndQuery}`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as Envelope<T>;
  if (body.status !== 'ok' || body.error) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body.data as T;
}

/** The PromQL Prometheus refuses, with its error (an empty list: all parse and evaluate). */
export async function checkQueries(prometheus: string, queries: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const q of new Set(queries)) {
    const res = await fetch(`${prometheus.replace(/\/$/, '')}/api/v1/query?query=${encodeURIComponent(q)}`, {
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { status: string; error?: string };
    if (body.status !== 'success') problems.push(`${q}: ${body.error ?? `HTTP ${res.status}`}`);
  }
  return problems;
}

/** fetch() refuses credentials in a URL: they become a Basic header, GRAFANA_API_KEY a Bearer one. */
function grafanaTarget(raw: string): { base: string; headers: Record<string, string> } {
  const u = new URL(raw);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const key = process.env['GRAFANA_API_KEY'];
  if (key) headers['authorization'] = `Bearer ${key}`;
  else if (u.username)
    headers['authorization'] =
      `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  u.username = '';
  u.password = '';
  return { base: u.toString().replace(/\/$/, ''), headers };
}

class Outputs {
  private written = new Set<string>();
  private pushed = new Set<string>();
  constructor(
    private readonly out: string | undefined,
    private readonly grafana: { base: string; headers: Record<string, string> } | undefined,
    private readonly log: Logger,
  ) {
    if (out) {
      fs.mkdirSync(out, { recursive: true });
      try {
        this.written = new Set(JSON.parse(fs.readFileSync(path.join(out, MANIFEST), 'utf8')) as string[]);
      } catch {
        // no manifest yet: nothing of ours to remove
      }
    }
  }

  async apply(dashboards: readonly { uid: string; json: unknown; folderId: number }[]): Promise<void> {
    const uids = new Set(dashboards.map((d) => d.uid));
    if (this.out) {
      for (const d of dashboards) {
        const file = path.join(this.out, `${d.uid}.json`);
        fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(d.json, null, 2)}\n`);
        fs.renameSync(`${file}.tmp`, file);
      }
      for (const old of this.written) if (!uids.has(old)) fs.rmSync(path.join(this.out, `${old}.json`), { force: true });
      this.written = uids;
      fs.writeFileSync(path.join(this.out, MANIFEST), `${JSON.stringify([...uids].sort())}\n`);
    }
    if (this.grafana) {
      const { base, headers } = this.grafana;
      for (const d of dashboards) {
        const res = await fetch(`${base}/api/dashboards/db`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ dashboard: { ...(d.json as object), id: null }, folderId: d.folderId, overwrite: true }),
          signal: AbortSignal.timeout(10_000),
        });
        if (!res.ok) throw new Error(`Grafana refused dashboard ${d.uid}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
        this.pushed.add(d.uid);
      }
      for (const old of [...this.pushed]) {
        if (uids.has(old)) continue;
        const res = await fetch(`${base}/api/dashboards/uid/${encodeURIComponent(old)}`, {
          method: 'DELETE',
          headers,
          signal: AbortSignal.timeout(10_000),
        });
        if (res.ok || res.status === 404) this.pushed.delete(old);
        else this.log.warn('cannot delete a dashboard from Grafana', { uid: old, status: res.status });
      }
    }
  }
}

export const observabilityCommand = command({
  name: 'observability',
  summary: 'generate a Grafana dashboard per Upstream and one for the gateway',
  flags,
  async run(f: FlagValues<typeof flags>) {
    if (!f.out && !f['grafana-url'] && !f.port)
      throw new UsageError('give --out DIR, --grafana-url URL or --port N: where the dashboards go');
    const { activeObservabilityOptions, generateDashboards } = await import('../../controller/observability/generate.js');
    const { checkGrafanaDashboard, grafanaDashboard } = await import('../../controller/observability/grafana.js');
    const log = componentLogger('observability', f['log-level']);
    const outputs = new Outputs(f.out, f['grafana-url'] ? grafanaTarget(f['grafana-url']) : undefined, log);
    const controller = f.controller.replace(/\/$/, '');
    let current: { uid: string; title: string; folderId: number; json: unknown }[] = [];
    let lastKey = '';
    let healthy = false;

    const cycle = async (): Promise<boolean> => {
      let generated: Generated;
      try {
        const [upstreams, settings] = await Promise.all([
          api<ListedUpstream[]>(controller, '/api/v1/resources?kind=Upstream'),
          api<ListedSettings[]>(controller, '/api/v1/resources?kind=Settings'),
        ]);
        generated = generateDashboards(upstreams, activeObservabilityOptions(settings));
      } catch (err) {
        healthy = false;
        log.warn('cannot read the controller API', { controller, error: err instanceof Error ? err.message : String(err) });
        return false;
      }
      healthy = true;
      const key = JSON.stringify(generated);
      if (key === lastKey) return true;
      for (const w of generated.warnings) log.warn(w);
      const next = generated.dashboards.map((d) => ({
        uid: d.model.uid,
        title: d.model.title,
        folderId: d.folderId,
        json: grafanaDashboard(d.model),
      }));
      for (const d of next) {
        const problems = checkGrafanaDashboard(d.json);
        if (problems.length) throw new Error(`dashboard ${d.uid} is not valid Grafana JSON: ${problems.join('; ')}`);
      }
      if (f['check-queries']) {
        const refused = await checkQueries(
          f['check-queries'],
          generated.dashboards.flatMap((d) => d.model.panels.flatMap((p) => p.queries.map((q) => q.promql))),
        );
        if (refused.length) {
          log.error('Prometheus refuses queries of the dashboards', { refused });
          return false;
        }
      }
      try {
        await outputs.apply(next);
      } catch (err) {
        log.warn('cannot write the dashboards', { error: err instanceof Error ? err.message : String(err) });
        return false;
      }
      current = next;
      lastKey = key;
      log.info('dashboards generated', { dashboards: next.length, ...(f.out ? { out: f.out } : {}) });
      return true;
    };

    if (f.once) return (await cycle()) ? 0 : 1;

    const server = f.port
      ? http.createServer((req, res) => {
          const url = new URL(req.url ?? '/', 'http://x');
          const send = (status: number, body: unknown): void => {
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          };
          if (url.pathname === '/healthz') return healthy ? send(200, 'ok') : send(503, 'the controller API cannot be read');
          if (url.pathname === '/dashboards')
            return send(
              200,
              current.map(({ uid, title, folderId }) => ({ uid, title, folderId })),
            );
          const m = /^\/dashboards\/([A-Za-z0-9_-]+)\.json$/.exec(url.pathname);
          const d = m ? current.find((c) => c.uid === m[1]) : undefined;
          return d ? send(200, d.json) : send(404, 'not found');
        })
      : undefined;
    if (server) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(f.port, f.host, () => resolve());
      });
      log.info('observability serving', { address: `http://${f.host}:${f.port}/dashboards` });
    }
    let stopped = false;
    let wake: (() => void) | undefined;
    const loop = (async () => {
      while (!stopped) {
        await cycle();
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, f.interval * 1000).unref();
        });
      }
    })();
    await waitForSignal();
    stopped = true;
    wake?.();
    await loop;
    server?.close();
    return 0;
  },
});
