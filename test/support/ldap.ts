// A real OpenLDAP server (Debian's slapd, installed by `make setup`) for the ldap step's tests: started per
// test file on a loopback port with a generated slapd.conf (mdb database, the memberof overlay so users
// carry memberOf) and loaded with an LDIF through ldapadd, as Gloo's LDAP guide sets its server up. stop()
// and start() keep the data, so a test can take the server away and bring it back on the same port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eventually, freePort, stopProcess } from './util.js';

export const SLAPD = ['/usr/sbin/slapd', '/usr/local/libexec/slapd'].find((p) => fs.existsSync(p));
const MODULES = ['/usr/lib/ldap', '/usr/lib/x86_64-linux-gnu/ldap', '/usr/lib/aarch64-linux-gnu/ldap'].find((p) =>
  fs.existsSync(path.join(p, 'back_mdb.so')),
);

export interface LdapServer {
  url: string;
  port: number;
  suffix: string;
  rootDn: string;
  rootPassword: string;
  /** stops the server, keeping its data */
  stop(): Promise<void>;
  /** starts it again on the same port */
  start(): Promise<void>;
  /** stops it and removes its files */
  close(): Promise<void>;
}

export interface LdapOptions {
  /** e.g. dc=solo,dc=io */
  suffix: string;
  /** the entries, parents first (the suffix entry included) */
  ldif: string;
  rootPassword?: string;
}

export async function startLdap(options: LdapOptions): Promise<LdapServer> {
  if (!SLAPD || !MODULES) throw new Error('slapd is not installed (make setup installs Debian slapd)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-slapd-'));
  const port = await freePort();
  const rootDn = `cn=admin,${options.suffix}`;
  const rootPassword = options.rootPassword ?? 'adminpwd';
  fs.mkdirSync(path.join(dir, 'db'));
  const conf = [
    'include /etc/ldap/schema/core.schema',
    'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema',
    'include /etc/ldap/schema/nis.schema',
    `modulepath ${MODULES}`,
    'moduleload back_mdb',
    'moduleload memberof',
    `pidfile ${path.join(dir, 'slapd.pid')}`,
    `argsfile ${path.join(dir, 'slapd.args')}`,
    'loglevel none',
    'database mdb',
    'maxsize 16777216',
    `suffix "${options.suffix}"`,
    `rootdn "${rootDn}"`,
    `rootpw ${rootPassword}`,
    `directory ${path.join(dir, 'db')}`,
    'overlay memberof',
    'access to attrs=userPassword by self write by anonymous auth by * none',
    'access to * by * read',
    '',
  ].join('\n');
  const confPath = path.join(dir, 'slapd.conf');
  fs.writeFileSync(confPath, conf);
  const url = `ldap://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    // -d 0: stay in the foreground (so the test owns the process) without debug output
    child = spawn(SLAPD, ['-f', confPath, '-h', url, '-d', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    await eventually(
      'slapd to answer',
      () => {
        if (child?.exitCode !== null) throw new Error(`slapd exited: ${stderr}`);
        const r = spawnSync('ldapsearch', ['-x', '-H', url, '-b', '', '-s', 'base', '-LLL', 'objectClass=*'], { timeout: 3000 });
        return r.status === 0 ? true : undefined;
      },
      20_000,
    );
  };
  const stop = async (): Promise<void> => {
    if (child) await stopProcess(child, 'SIGTERM', 5000);
    child = undefined;
  };
  await start();
  const add = spawnSync('ldapadd', ['-x', '-H', url, '-D', rootDn, '-w', rootPassword], {
    input: options.ldif,
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (add.status !== 0) {
    await stop();
    throw new Error(`ldapadd failed: ${add.stderr}`);
  }
  return {
    url,
    port,
    suffix: options.suffix,
    rootDn,
    rootPassword,
    stop,
    start,
    close: async () => {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The users and groups of Gloo's LDAP guide (marco: developers; rick: developers, managers; scottc: developers, sales). */
export const GLOO_GUIDE_LDIF = `dn: dc=solo,dc=io
objectClass: dcObject
objectClass: organization
dc: solo
o: solo.io

dn: ou=people,dc=solo,dc=io
objectClass: organizationalUnit
ou: people
description: All solo.io people

dn: uid=marco,ou=people,dc=solo,dc=io
objectClass: inetOrgPerson
cn: Marco Schmidt
sn: Schmidt
uid: marco
userPassword: marcopwd
mail: marco.schmidt@solo.io

dn: uid=rick,ou=people,dc=solo,dc=io
objectClass: inetOrgPerson
cn: Rick Ducott
sn: Ducott
uid: rick
userPassword: rickpwd
mail: rick.ducott@solo.io

dn: uid=scottc,ou=people,dc=solo,dc=io
objectClass: inetOrgPerson
cn: Scott Cranton
sn: Cranton
uid: scottc
userPassword: scottcpwd
mail: scott.cranton@solo.io

dn: ou=groups,dc=solo,dc=io
objectClass: organizationalUnit
ou: groups
description: Generic parent entry for groups

dn: cn=developers,ou=groups,dc=solo,dc=io
objectClass: groupOfNames
cn: developers
description: Developers group
member: uid=marco,ou=people,dc=solo,dc=io
member: uid=rick,ou=people,dc=solo,dc=io
member: uid=scottc,ou=people,dc=solo,dc=io

dn: cn=sales,ou=groups,dc=solo,dc=io
objectClass: groupOfNames
cn: sales
description: Sales group
member: uid=scottc,ou=people,dc=solo,dc=io

dn: cn=managers,ou=groups,dc=solo,dc=io
objectClass: groupOfNames
cn: managers
description: Managers group
member: uid=rick,ou=people,dc=solo,dc=io
`;
