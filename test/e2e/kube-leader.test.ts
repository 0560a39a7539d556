// Two controller replicas on one cluster: both serve xDS, one holds the coordination.k8s.io Lease and
// writes statuses; killed without a chance to let go, its Lease runs out and the other takes over.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCrds, startKubeApiServer, startKubeController, type KubeApiServer, type KubeController } from '../support/kube.js';
import { eventually } from '../support/util.js';

let kube: KubeApiServer;
let dir: string;
const replicas: KubeController[] = [];

const vs = (name: string): string => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec: { virtualHost: { domains: [${name}.example.com], routes: [{ directResponseAction: { status: 200, body: ${name} } }] } }
`;

const holder = (): string =>
  kube.kubectl(['get', 'lease', 'legate-controller', '-n', 'legate-system', '-o', 'jsonpath={.spec.holderIdentity}'], { check: false })
    .stdout;
const state = (name: string): string =>
  kube.kubectl(['get', 'virtualservices.gateway.legate.dev', name, '-o', 'jsonpath={.status.state}'], { check: false }).stdout;

beforeAll(async () => {
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-leader-'));
  installCrds(kube);
  kube.kubectl(['create', 'namespace', 'legate-system']);
  for (const name of ['replica-a', 'replica-b']) replicas.push(await startKubeController(kube, dir, name, ['--lease-duration', '3']));
}, 240_000);

afterAll(async () => {
  for (const r of replicas) await r.stop();
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('leader election', () => {
  it('elects one replica; both serve the config; the leader writes the status', async () => {
    const leader = await eventually('a lease holder', () => holder() || undefined);
    expect(['replica-a', 'replica-b']).toContain(leader);
    kube.kubectl(['apply', '-f', '-'], { input: vs('one') });
    for (const r of replicas) {
      await eventually(`${r.process.pid} serves it`, async () => {
        const served = await r.api<Record<string, Record<string, unknown[]>>>('/api/v1/served');
        return JSON.stringify(served).includes('one.example.com') ? true : undefined;
      });
    }
    expect(await eventually('status', () => state('one') || undefined)).toBe('Accepted');
  });

  it('hands over within the lease duration when the leader dies, and the new leader writes statuses', async () => {
    const before = holder();
    const leader = replicas.find((_, i) => ['replica-a', 'replica-b'][i] === before)!;
    await leader.stop('SIGKILL'); // no release: the Lease must run out
    const killedAt = Date.now();
    const next = await eventually('a new holder', () => (holder() && holder() !== before ? holder() : undefined), 15_000);
    const handoverMs = Date.now() - killedAt;
    expect(next).not.toBe(before);
    // lease duration (3 s) + a renew period (1 s) + polling with kubectl on a busy 2-core machine
    expect(handoverMs).toBeLessThan(8000);
    kube.kubectl(['apply', '-f', '-'], { input: vs('two') });
    expect(await eventually('status by the new leader', () => state('two') || undefined)).toBe('Accepted');
  });

  it("creates the Lease's namespace when it is missing (the quickstart without the chart)", async () => {
    const ns = 'quickstart-leases';
    expect(kube.kubectl(['get', 'namespace', ns], { check: false }).status).not.toBe(0);
    replicas.push(await startKubeController(kube, dir, 'replica-c', ['--lease-duration', '3', '--lease-namespace', ns]));
    const lease = (): string =>
      kube.kubectl(['get', 'lease', 'legate-controller', '-n', ns, '-o', 'jsonpath={.spec.holderIdentity}'], { check: false }).stdout;
    expect(await eventually('the Lease in the created namespace', () => lease() || undefined)).toBe('replica-c');
  });
});
