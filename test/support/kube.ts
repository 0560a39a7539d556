// A real Kubernetes API server for the tests, the way controller-runtime's envtest runs one: etcd and
// kube-apiserver (built from the Go modules pinned in test/kube/tools by scripts/kube-tools.sh) on
// random loopback ports, a static admin token, RBAC on. No nodes, no controllers: objects are stored
// and validated, watches work. stop() kills both and removes their directory.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import { ROOT } from './gateway.js';
import { eventually, freePort, stopProcess } from './util.js';

export const KUBE_BIN = path.join(ROOT, '.cache', 'kube', 'bin');

export interface KubeApiServer {
  url: string;
  /** a kubeconfig for the admin token (system:masters) */
  kubeconfig: string;
  token: string;
  /** kubectl against this server; throws with its stderr when it fails and `check` is on */
  kubectl(args: string[], options?: { input?: string; check?: boolean }): { status: number; stdout: string; stderr: string };
  /** GET/POST… on the API with the admin token; TLS is self-signed, so not verified */
  api<T = Record<string, unknown>>(
    method: string,
    apiPath: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; body: T }>;
  /** kills kube-apiserver (etcd keeps the objects), and starts it again on the same port */
  killApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the servers if needed (minutes, once) and tells whether they are there. */
export function ensureKubeTools(): void {
  const result = spawnSync(path.join(ROOT, 'scripts', 'kube-tools.sh'), { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('scripts/kube-tools.sh failed: see its output above');
}

function logTail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '';
  }
}

export interface KubeApiServerOptions {
  /** more kube-apiserver flags, e.g. to turn its watch cache off */
  extraArgs?: readonly string[];
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  ensureKubeTools();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-'));
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const children: ChildProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  const spawnLogged = (name: string, bin: string, args: string[]): ChildProcess => {
    const log = fs.openSync(path.join(dir, `${name}.log`), 'a');
    const child = spawn(path.join(KUBE_BIN, bin), args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    children.push(child);
    return child;
  };
  const stop = async (): Promise<void> => {
    for (const close of closers) await close().catch(() => undefined);
    for (const c of children.reverse()) await stopProcess(c);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    spawnLogged('etcd', 'etcd', [
      ...['--data-dir', path.join(dir, 'etcd'), '--name', 'default'],
      ...['--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl],
      ...['--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl, '--initial-cluster', `default=${peerUrl}`],
      // a test store: durability is not the point, speed is
      '--unsafe-no-fsync',
    ]);

    const token = 'legate-test-admin-token';
    fs.writeFileSync(path.join(dir, 'tokens.csv'), `${token},legate-test-admin,1,"system:masters"\n`);
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    fs.writeFileSync(path.join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    fs.writeFileSync(path.join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const apiserverArgs = [
      ...['--etcd-servers', etcdUrl, '--cert-dir', path.join(dir, 'certs')],
      ...['--bind-address', '127.0.0.1', '--secure-port', String(apiPort)],
      // 1.37 reconciles the kubernetes Service's endpoints to the advertise address, which must not
      // be loopback for that; the tests need no such endpoints
      ...['--advertise-address', '127.0.0.1', '--endpoint-reconciler-type', 'none'],
      ...['--service-cluster-ip-range', '10.0.0.0/24', '--allow-privileged=true'],
      ...['--token-auth-file', path.join(dir, 'tokens.csv'), '--authorization-mode', 'RBAC'],
      ...['--service-account-issuer', 'https://legate.test', '--service-account-key-file', path.join(dir, 'sa.pub')],
      ...['--service-account-signing-key-file', path.join(dir, 'sa.key')],
      ...(options.extraArgs ?? []),
    ];
    let apiserver = spawnLogged('kube-apiserver', 'kube-apiserver', apiserverArgs);

    const url = `https://127.0.0.1:${apiPort}`;
    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: test, cluster: { server: "' + url + '", insecure-skip-tls-verify: true } }]',
        'users: [{ name: admin, user: { token: ' + token + ' } }]',
        'contexts: [{ name: test, context: { cluster: test, user: admin, namespace: default } }]',
        'current-context: test',
        '',
      ].join('\n'),
    );

    // the API server's certificate is self-signed for this run; only loopback is ever reached
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    const api = async <T>(
      method: string,
      apiPath: string,
      body?: unknown,
      contentType = 'application/json',
    ): Promise<{ status: number; body: T }> => {
      const res = await request(url + apiPath, {
        method: method as Dispatcher.HttpMethod,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        dispatcher: insecure,
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      const text = await res.body.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : {};
      } catch {
        parsed = { text };
      }
      return { status: res.statusCode, body: parsed as T };
    };
    closers.push(() => insecure.close());

    const ready = (): Promise<boolean> =>
      eventually(
        'kube-apiserver /readyz',
        async () => {
          if (apiserver.exitCode !== null) throw new Error(`kube-apiserver exited:\n${logTail(path.join(dir, 'kube-apiserver.log'))}`);
          return (await api('GET', '/readyz')).status === 200 ? true : undefined;
        },
        60_000,
      );
    await ready();
    const killApiServer = async (): Promise<void> => {
      const exited = new Promise<void>((resolve) => apiserver.once('exit', () => resolve()));
      apiserver.kill('SIGKILL');
      await exited;
    };
    const startApiServer = async (): Promise<void> => {
      apiserver = spawnLogged('kube-apiserver', 'kube-apiserver', apiserverArgs);
      await ready();
    };

    const kubectl: KubeApiServer['kubectl'] = (args, options = {}) => {
      const r = spawnSync(path.join(KUBE_BIN, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], {
        input: options.input ?? '',
        encoding: 'utf8',
        timeout: 120_000,
        maxBuffer: 256 * 1024 * 1024, // a list of a thousand objects is megabytes
      });
      const out = { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
      if ((options.check ?? true) && out.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${out.status}):\n${out.stderr}`);
      return out;
    };
    return { url, kubeconfig, token, kubectl, api, killApiServer, startApiServer, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface KubeController {
  ports: { xds: number; api: number; http: number; https: number; stats: number; dev: number };
  process: ChildProcess;
  log(): string;
  /** the controller API (http://127.0.0.1:<api>, or the --api-host given) */
  api<T>(pathAndQuery: string): Promise<T>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `legate controller --source kubernetes` against `kube`, on random loopback ports; logs in `dir`. */
export async function startKubeController(
  kube: KubeApiServer,
  dir: string,
  name: string,
  extra: string[] = [],
  kubeconfig = kube.kubeconfig,
): Promise<KubeController> {
  const ports = { xds: await freePort(), api: await freePort(), http: await freePort(), https: await freePort(), stats: 0, dev: 0 };
  ports.stats = await freePort();
  ports.dev = await freePort();
  // the controller API binds loopback unless the test moves it (--api-host)
  const apiHostAt = extra.indexOf('--api-host');
  const apiHost = apiHostAt >= 0 ? (extra[apiHostAt + 1] ?? '127.0.0.1') : '127.0.0.1';
  const logFile = path.join(dir, `${name}.log`);
  const log = fs.openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin', 'legate.js'),
      'controller',
      ...['--source', 'kubernetes', '--kubeconfig', kubeconfig],
      ...['--xds-port', String(ports.xds), '--api-port', String(ports.api), '--http-port', String(ports.http)],
      ...['--https-port', String(ports.https), '--stats-port', String(ports.stats), '--dev-port', String(ports.dev)],
      ...extra,
    ],
    { stdio: ['ignore', log, log], env: { ...process.env, POD_NAME: name } },
  );
  fs.closeSync(log);
  const stop = (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => stopProcess(child, signal);
  try {
    await eventually(
      `${name} API`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited:\n${logTail(logFile)}`);
        return (await fetch(`http://${apiHost}:${ports.api}/healthz`)).ok ? true : undefined;
      },
      20_000,
    );
  } catch (err) {
    await stop('SIGKILL');
    throw err;
  }
  return {
    ports,
    process: child,
    log: () => fs.readFileSync(logFile, 'utf8'),
    api: async <T>(pathAndQuery: string): Promise<T> => {
      const res = await fetch(`http://${apiHost}:${ports.api}${pathAndQuery}`);
      return ((await res.json()) as { data: T }).data;
    },
    stop,
  };
}

/** Applies Legate's CRDs (Legate and Gloo groups) and waits until they are served. */
export function installCrds(kube: KubeApiServer): void {
  const crds = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'legate.js'), 'crds', '--gloo-groups'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (crds.status !== 0) throw new Error(`legate crds: ${crds.stderr}`);
  kube.kubectl(['apply', '--server-side', '-f', '-'], { input: crds.stdout });
  kube.kubectl(['wait', '--for', 'condition=Established', '--timeout', '60s', 'crd', '-l', 'app.kubernetes.io/part-of=legate']);
}

/**
 * Applies install/kubernetes/rbac.yaml and returns a kubeconfig with a token of its ServiceAccount
 * (TokenRequest API), so a controller started with it has exactly the rights the install grants.
 */
export function controllerKubeconfig(kube: KubeApiServer, dir: string): string {
  kube.kubectl(['apply', '-f', path.join(ROOT, 'install', 'kubernetes', 'rbac.yaml')]);
  const token = kube.kubectl(['create', 'token', 'legate-controller', '-n', 'legate-system', '--duration', '1h']).stdout.trim();
  const file = path.join(dir, 'controller.kubeconfig');
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{ name: test, cluster: { server: "${kube.url}", insecure-skip-tls-verify: true } }]`,
      `users: [{ name: legate-controller, user: { token: ${token} } }]`,
      'contexts: [{ name: test, context: { cluster: test, user: legate-controller } }]',
      'current-context: test',
      '',
    ].join('\n'),
  );
  return file;
}
