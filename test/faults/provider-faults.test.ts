// Item 3: the introspection provider slow (over the 2 s introspection timeout), down, answering garbage
// or HTTP 500. Protected requests get 403 within the timeout, extauth logs why (never the token), and
// when the provider is well again the next request passes, with no restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { sleep } from '../support/util.js';
import { figure } from './figures.js';
import { SECRETS, bearer, gatewayConfig, startFakeProvider, type FakeProvider, type ProviderMode } from './fixtures.js';
import { componentPid } from './procs.js';

const ITEM = 'introspection-faults';
/** extauth's introspection timeout (extensions/extauth/authorizer.ts, introspectionTimeoutMs) */
const INTROSPECTION_TIMEOUT_MS = 2000;

let gw: Gateway;
let app: EchoUpstream;
let provider: FakeProvider;

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startFakeProvider();
  gw = await startGateway({ 'faults.yaml': gatewayConfig(app.port, provider.url) });
  await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await provider?.close();
  await app?.close();
});

async function timed(path: string, headers: Record<string, string> = {}): Promise<{ status: number; ms: number; text: string }> {
  const t = performance.now();
  const r = await gw.request(path, { headers });
  return { status: r.status, ms: Math.round(performance.now() - t), text: r.text };
}

const cases: [ProviderMode, string, number][] = [
  // mode, the `kind` extauth logs, the slowest acceptable denial
  ['slow', 'timeout', INTROSPECTION_TIMEOUT_MS + 700],
  ['down', 'unreachable', 700],
  ['garbage', 'malformed', 700],
  ['500', 'status', 700],
];

describe('introspection provider faults', () => {
  it.each(cases)(
    'provider %s: 403 within the timeout, the reason logged without the token, then 200 with no restart',
    async (mode, kind, maxMs) => {
      const extauthPid = componentPid(gw, 'extauth');
      await sleep(1100); // extauth logs introspection errors at most once a second per endpoint
      const logBefore = gw.log('extauth').length;
      provider.mode = mode;
      const denials = [];
      for (let i = 0; i < 3; i++) denials.push(await timed('/secure/x', bearer()));
      const plain = await timed('/plain');
      provider.mode = 'ok';
      const t = performance.now();
      const back = await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 10_000);
      const recoveredMs = Math.round(performance.now() - t);

      figure(ITEM, `${mode}: denials`, denials.map((d) => d.status).join(', '));
      figure(ITEM, `${mode}: slowest denial`, Math.max(...denials.map((d) => d.ms)), 'ms');
      figure(ITEM, `${mode}: served again after the provider recovered`, recoveredMs, 'ms');
      for (const d of denials) {
        expect(d.status).toBe(403);
        expect(d.ms).toBeLessThan(maxMs);
        expect(d.text).not.toContain(SECRETS.token);
      }
      expect(plain.status).toBe(200);
      expect(back.status).toBe(200);
      expect(componentPid(gw, 'extauth')).toBe(extauthPid);
      const lines = gw
        .log('extauth')
        .slice(logBefore)
        .split('\n')
        .filter((l) => l.includes('token introspection failed; denying'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines[0]).toMatchObject({ level: 'error', kind, config_id: 'legate-system.faults' });
      expect(gw.log('extauth')).not.toContain(SECRETS.token);
    },
  );
});
