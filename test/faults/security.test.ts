// Item 7: security checks on a running gateway. Every port but Envoy's gateway listeners is bound to
// loopback; the controller API takes no writes; and the test's secrets (an AuthConfig's client secret,
// an access token used in requests) appear in no log file, no `legatectl` output (`debug yaml`, `get`,
// `proxy served-config`), no dev-mode endpoint, no metrics, no controller API answer and no state file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { figure } from './figures.js';
import { GRAPHQL_QUERY, SECRETS, bearer, gatewayConfig, startFakeProvider, type FakeProvider } from './fixtures.js';
import { componentPid, runState } from './procs.js';

const ITEM = 'security';
let gw: Gateway;
let app: EchoUpstream;
let provider: FakeProvider;

const settings = `
---
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { devMode: true }
`;

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startFakeProvider();
  gw = await startGateway({ 'faults.yaml': gatewayConfig(app.port, provider.url) + settings }, { env: { START_STATS_SERVER: '1' } });
  await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 30_000);
  // traffic that puts the token through every path: allowed, denied (inactive, provider failing), GraphQL
  await gw.request('/secure/x', { headers: bearer(`bad-${SECRETS.token}`) });
  provider.mode = '500';
  await gw.request('/secure/x', { headers: bearer() });
  provider.mode = 'ok';
  await gw.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json', ...bearer() }, body: GRAPHQL_QUERY });
});

afterAll(async () => {
  await gw?.stop();
  await provider?.close();
  await app?.close();
});

/** Listening TCP sockets (address:port) of a process, from /proc/net/tcp{,6} and its fds. */
function listening(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const out: string[] = [];
  for (const [file, v6] of [
    ['/proc/net/tcp', false],
    ['/proc/net/tcp6', true],
  ] as const) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] !== '0A' || !inodes.has(f[9]!)) continue; // 0A: LISTEN
      const [hex, port] = f[1]!.split(':');
      out.push(`${v6 ? ipv6(hex!) : ipv4(hex!)}:${parseInt(port!, 16)}`);
    }
  }
  return out.sort();
}

const ipv4 = (hex: string) => [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.');
function ipv6(hex: string): string {
  if (/^0{32}$/.test(hex)) return '[::]';
  if (hex === '00000000000000000000000001000000') return '[::1]';
  if (hex.startsWith('0000000000000000FFFF0000')) return ipv4(hex.slice(24));
  return `[${hex}]`;
}
const isLoopback = (address: string) => address.startsWith('127.') || address.startsWith('[::1]');

describe('security', () => {
  it('binds every port to loopback except the gateway listeners', async () => {
    const exposed: Record<string, string[]> = {};
    for (const component of ['controller', 'extauth', 'graphql', 'envoy'] as const) {
      // legate run is ready once the controller and Envoy are; an extension may still be starting
      const sockets = await eventually(`${component} to listen`, () => {
        const pid = componentPid(gw, component);
        const s = pid === undefined ? [] : listening(pid);
        return s.length > 0 ? s : undefined;
      });
      // (Envoy opens one socket per worker on a listener: the same address twice)
      const wide = [...new Set(sockets.filter((s) => !isLoopback(s)))];
      if (wide.length) exposed[component] = wide;
    }
    figure(ITEM, 'listening beyond loopback', JSON.stringify(exposed));
    // Envoy's gateway listener (the HTTP port, on ::) and nothing else
    expect(exposed).toEqual({ envoy: [`[::]:${gw.ports.http}`] });
  });

  it('the controller API refuses every write', async () => {
    const statuses: number[] = [];
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const p of ['/api/v1/resources', '/api/v1/served', '/healthz']) {
        statuses.push((await fetch(`http://127.0.0.1:${gw.ports.api}${p}`, { method, body: method === 'DELETE' ? null : '{}' })).status);
      }
    }
    figure(ITEM, 'controller API writes answered', [...new Set(statuses)].join(', '));
    expect(new Set(statuses)).toEqual(new Set([405]));
  });

  it('the test secrets appear in no log, legatectl output, dev-mode endpoint, metrics, API answer or state file', async () => {
    const outputs: Record<string, string> = {};
    // logs are written as they come: wait for the last requests' lines
    await eventually('extauth logged the failing provider', () =>
      gw.log('extauth').includes('token introspection failed') ? true : undefined,
    );
    for (const f of fs.readdirSync(path.join(gw.stateDir, 'logs')))
      outputs[`log ${f}`] = fs.readFileSync(path.join(gw.stateDir, 'logs', f), 'utf8');
    for (const f of fs.readdirSync(gw.stateDir)) {
      const full = path.join(gw.stateDir, f);
      if (fs.statSync(full).isFile()) outputs[`state ${f}`] = fs.readFileSync(full, 'utf8');
    }
    const yamlFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'legate-sec-')), 'all.yaml');
    const debugYaml = gw.ctl('debug', 'yaml', '-f', yamlFile);
    expect(debugYaml.status).toBe(0);
    outputs['legatectl debug yaml'] = fs.readFileSync(yamlFile, 'utf8') + debugYaml.stdout;
    for (const args of [
      ['get', 'secrets', '-A', '-o', 'yaml'],
      ['get', 'authconfigs', '-A', '-o', 'yaml'],
      ['proxy', 'served-config'],
      ['debug', 'logs'],
      ['check'],
    ]) {
      const r = gw.ctl(...args);
      outputs[`legatectl ${args.join(' ')}`] = r.stdout + r.stderr;
    }
    const state = runState(gw);
    const dev = `http://127.0.0.1:${gw.ports.dev}`;
    await eventually('the dev-mode endpoint', async () => ((await fetch(`${dev}/xds`)).ok ? true : undefined));
    const roles = ((await (await fetch(`${dev}/xds`)).json()) as { data: string[] }).data;
    const urls = [
      `${dev}/snapshots/input`,
      `${dev}/snapshots/ir`,
      ...roles.map((r) => `${dev}/xds/${encodeURIComponent(r)}`),
      ...['resources', 'served', 'errors', 'connections'].map((p) => `http://127.0.0.1:${gw.ports.api}/api/v1/${p}`),
      ...[gw.ports.controllerStats, gw.ports.extauthStats, gw.ports.graphqlStats].map((p) => `http://127.0.0.1:${p}/metrics`),
      `http://127.0.0.1:${gw.ports.controllerStats}/snapshots/proxies`,
      `http://127.0.0.1:${gw.ports.admin}/stats`,
      `http://127.0.0.1:${gw.ports.admin}/config_dump?include_eds`,
    ];
    for (const url of urls) outputs[url] = await (await fetch(url)).text();
    expect(Object.keys(state.components)).toContain('controller');

    const leaks: string[] = [];
    for (const [where, text] of Object.entries(outputs)) {
      for (const [name, secret] of Object.entries(SECRETS)) if (text.includes(secret)) leaks.push(`${name} in ${where}`);
    }
    figure(ITEM, 'outputs searched for the test secrets', Object.keys(outputs).length);
    figure(
      ITEM,
      'bytes searched',
      Object.values(outputs).reduce((n, t) => n + t.length, 0),
    );
    figure(ITEM, 'leaks', leaks.length ? leaks.join('; ') : 'none');
    expect(leaks).toEqual([]);
  });
});
