// `legate run --xds-tls` and `--extensions-mtls`: a private CA and two certificates for mutual TLS, made with
// openssl into <state-dir>/<name> (kept across runs). --xds-tls (xds-tls/): server/ for the controller (SAN
// 127.0.0.1, localhost), client/ for Envoy and the extension services. --extensions-mtls (extensions-tls/): server/
// for the extension services (SAN 127.0.0.1, localhost), client/ for Envoy. Each folder holds ca.crt, tls.crt and
// tls.key, the layout of a Kubernetes TLS Secret. Keys are EC P-256, mode 0600.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface XdsTlsDirs {
  server: string;
  client: string;
}

/** One set of certificates: its folder under the state dir (also the prefix of its names), the flag that asks for it. */
interface MutualTls {
  name: string;
  flag: string;
}

const XDS: MutualTls = { name: 'xds-tls', flag: '--xds-tls' };
const EXTENSIONS: MutualTls = { name: 'extensions-tls', flag: '--extensions-mtls' };

function openssl(args: string[], cwd: string, flag: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new Error(`${flag} makes its certificates with openssl, which is not on PATH`, { cause: err });
    throw new Error(`${flag}: openssl ${args[0]} failed: ${e.stderr?.toString().trim() ?? e.message}`, { cause: err });
  }
}

export function ensureXdsTls(stateDir: string): XdsTlsDirs {
  return ensureMutualTls(stateDir, XDS);
}

/** --extensions-mtls: the same layout in <state-dir>/extensions-tls, server/ for the extensions, client/ for Envoy. */
export function ensureExtensionsTls(stateDir: string): XdsTlsDirs {
  return ensureMutualTls(stateDir, EXTENSIONS);
}

function ensureMutualTls(stateDir: string, what: MutualTls): XdsTlsDirs {
  const prefix = what.name.replace(/-tls$/, '');
  const run = (args: string[], cwd: string): void => openssl(args, cwd, what.flag);
  const dir = path.join(stateDir, what.name);
  const dirs = { server: path.join(dir, 'server'), client: path.join(dir, 'client') };
  const complete = (d: string) => ['ca.crt', 'tls.crt', 'tls.key'].every((f) => fs.existsSync(path.join(d, f)));
  if (complete(dirs.server) && complete(dirs.client)) return dirs;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', `/CN=legate-${prefix}-ca`], dir);
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'],
    ['client', `subjectAltName=DNS:legate-${prefix}-client\nextendedKeyUsage=clientAuth\n`],
  ] as const) {
    const d = dirs[name];
    fs.mkdirSync(d, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    run(['req', ...ec, '-keyout', path.join(d, 'tls.key'), '-out', `${name}.csr`, '-subj', `/CN=legate-${prefix}-${name}`], dir);
    run(
      ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '825'].concat([
        '-extfile',
        `${name}.ext`,
        '-out',
        path.join(d, 'tls.crt'),
      ]),
      dir,
    );
    fs.copyFileSync(path.join(dir, 'ca.crt'), path.join(d, 'ca.crt'));
    fs.chmodSync(path.join(d, 'tls.key'), 0o600);
  }
  fs.chmodSync(path.join(dir, 'ca.key'), 0o600);
  return dirs;
}
