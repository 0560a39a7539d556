// bearer-check's edge cache shared across Envoy workers (proxy-wasm shared data), on a real Envoy with
// two workers (`--concurrency 2`, through a wrapper given to `legate run --envoy`): a new token used
// over many connections, which the kernel spreads over both workers, costs exactly one ext_authz
// check (counted by Envoy and by the extauth service's own metrics); an edited AuthConfig changes the
// route's version, so nothing cached under the old one is served on any worker.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, startProvider, type RunningProvider } from '../../examples/apps/oauth-provider.mjs';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

const WORKERS = 2;
/** connections per token after the first request: all on one worker has odds 2^-15 */
const CONNECTIONS = 16;

let gw: Gateway;
let app: EchoUpstream;
let provider: RunningProvider;
let wrapperDir: string;

const authConfig = (scopes: string[]) => `
apiVersion: v1
kind: Secret
metadata: { name: extauth-client, namespace: legate-system }
stringData: { clientSecret: legate-extauth-secret }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: oauth, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: http://127.0.0.1:${provider.port}/token/introspection
            clientId: legate-extauth
            clientSecretRef: { name: extauth-client, namespace: legate-system }
          cacheTimeout: 10m
          requiredScopes: { scope: [${scopes.join(', ')}] }
`;

async function token(scope: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${provider.port}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** One request on a connection of its own (no keep-alive agent), so the kernel picks the worker. */
function freshConnection(t: string, p = '/products'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: gw.ports.http, path: p, headers: { authorization: `Bearer ${t}` }, agent: false, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function envoyStats(filter: string): Promise<string> {
  return (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${encodeURIComponent(filter)}`)).text();
}

async function envoyStat(name: string): Promise<number> {
  const m = /: (\d+)/.exec(await envoyStats(`^${name.replaceAll('.', '\\.')}$`));
  return m ? Number(m[1]) : 0;
}

/** Downstream connections each worker of the HTTP listener accepted so far. */
async function connectionsByWorker(): Promise<number[]> {
  const text = await envoyStats(`_${gw.ports.http}\\.worker_\\d+\\.downstream_cx_total$`);
  const out = Array.from({ length: WORKERS }, () => 0);
  for (const m of text.matchAll(/worker_(\d+)\.downstream_cx_total: (\d+)/g)) out[Number(m[1])]! += Number(m[2]);
  return out;
}

/** Checks the extauth service answered, from its Prometheus metrics (all outcomes). */
async function extauthChecks(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.extauthStats}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^legate_extauth_checks_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startProvider({ port: 0, store: createStore(), quiet: true, ttlSeconds: 600 });
  wrapperDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-envoy-'));
  const wrapper = path.join(wrapperDir, 'envoy');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec '${path.join(ROOT, '.venv/bin/envoy')}' "$@" --concurrency ${WORKERS}\n`, { mode: 0o755 });
  gw = await startGateway(
    { 'auth.yaml': authConfig(['products:read']), 'app.yaml': appBehindAuth(app.port, [['/', 'oauth']]) },
    { args: ['--envoy', wrapper], env: { START_STATS_SERVER: '1' } },
  );
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  const t = await token('products:read');
  await gw.until('/products', (r) => r.status === 200, { headers: { authorization: `Bearer ${t}` } });
}, 90_000);

afterAll(async () => {
  await gw?.stop();
  await provider?.stop();
  await app?.close();
  if (wrapperDir) fs.rmSync(wrapperDir, { recursive: true, force: true });
});

describe('bearer-check edge cache shared by the Envoy workers', () => {
  it('runs Envoy with two workers', async () => {
    const info = (await (await fetch(`http://127.0.0.1:${gw.ports.admin}/server_info`)).json()) as {
      command_line_options: { concurrency: number };
    };
    expect(info.command_line_options.concurrency).toBe(WORKERS);
  });

  it('a new token over many connections on both workers costs exactly one ext_authz check', async () => {
    for (let k = 0; k < 3; k++) {
      const t = await token('products:read');
      const envoyBefore = await envoyStat('cluster.legate-extauth.upstream_rq_total');
      const extauthBefore = await extauthChecks();
      const sharedBefore = await envoyStat('wasmcustom.legate_bearer_check_cache_shared_hits');
      const cxBefore = await connectionsByWorker();
      // the first request: ext_authz decides, the answering worker stores the token for all
      expect(await freshConnection(t)).toBe(200);
      const statuses = await Promise.all(Array.from({ length: CONNECTIONS }, () => freshConnection(t)));
      expect(statuses).toEqual(Array.from({ length: CONNECTIONS }, () => 200));
      const cxAfter = await connectionsByWorker();
      // the connections really were spread: each worker took some
      for (let w = 0; w < WORKERS; w++) expect(cxAfter[w]! - cxBefore[w]!, `worker ${w} connections`).toBeGreaterThan(0);
      expect(await envoyStat('cluster.legate-extauth.upstream_rq_total')).toBe(envoyBefore + 1);
      expect(await extauthChecks()).toBe(extauthBefore + 1);
      // the worker that did not see the first request learnt the token from shared data
      expect(await envoyStat('wasmcustom.legate_bearer_check_cache_shared_hits')).toBeGreaterThan(sharedBefore);
    }
    expect(await envoyStat('wasmcustom.legate_bearer_check_cache_shared_store_failures')).toBe(0);
  });

  it('an edited AuthConfig invalidates what every worker cached, and the new version is shared again', async () => {
    const reader = await token('products:read');
    expect(await freshConnection(reader)).toBe(200);
    for (const s of await Promise.all(Array.from({ length: CONNECTIONS }, () => freshConnection(reader)))) expect(s).toBe(200);
    // a required scope the token lacks: the version in the route metadata changes, the cached entries
    // (keyed with the old version) no longer match on any worker
    gw.write('auth.yaml', authConfig(['products:write']));
    // applied once Envoy (every worker) and the extauth service have the new version
    await eventually(
      'the edited AuthConfig to apply on both workers',
      async () => {
        const statuses = await Promise.all(Array.from({ length: 8 }, () => freshConnection(reader)));
        return statuses.every((st) => st === 403) ? true : undefined;
      },
      30_000,
    );
    const before = await extauthChecks();
    const denied = await Promise.all(Array.from({ length: CONNECTIONS }, () => freshConnection(reader)));
    expect(denied).toEqual(Array.from({ length: CONNECTIONS }, () => 403));
    expect(await extauthChecks()).toBe(before + CONNECTIONS); // every one was judged again, none served from a cache
    const writer = await token('products:read products:write');
    const checks = await extauthChecks();
    expect(await freshConnection(writer)).toBe(200);
    for (const s of await Promise.all(Array.from({ length: CONNECTIONS }, () => freshConnection(writer)))) expect(s).toBe(200);
    expect(await extauthChecks()).toBe(checks + 1);
  });
});
