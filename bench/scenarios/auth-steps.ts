// The AuthConfig steps that read other credentials than a bearer token, against their real servers. One
// `legate run` with routes to the shared upstream: /open (no auth), /ldap (ldap against a Debian slapd loaded
// with Gloo's guide users: rick, a manager, passes; the step keeps an outcome 10 s, so most checks bind
// nothing), /opa (opaAuth: Gloo's guide policy compiled to wasm, evaluated in extauth per request) and /basic
// (basicAuth apr1, a verified credential remembered a minute). ldap and basicAuth allows are granted to the edge
// cache (credential-check, keyed on Authorization) as long as extauth keeps them; every OPA request is an ext_authz
// Check. Skipped where slapd or the opa binary (make opa) is missing.
import fs from 'node:fs';
import path from 'node:path';
import { GLOO_GUIDE_LDIF, SLAPD, startLdap, type LdapServer } from '../../test/support/ldap.js';
import { envoyStats, legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { routeYaml, upstreamYaml, vsWithRoutesYaml } from '../lib/resources.js';
import { send, waitFor } from '../lib/net.js';
import { acquire } from '../lib/servers.js';
import { ScenarioSkipped, type BenchContext, type LoadScenario, type LoadTarget, type Upstream } from '../lib/types.js';

const EXT_AUTHZ_CALLS = 'cluster.legate-extauth.upstream_rq_total';
const RICK = `Basic ${Buffer.from('rick:rickpwd').toString('base64')}`;
const USER = `Basic ${Buffer.from('user:password').toString('base64')}`;

const POLICY = `package bench

default allow = false
allow {
    startswith(input.http_request.path, "/opa")
    input.http_request.method == "GET"
}
`;

interface StepsGateway {
  gw: Legate;
  up: Upstream;
  ldap: LdapServer;
  stop(): Promise<void>;
}

function gateway(ctx: BenchContext): Promise<{ value: StepsGateway; release(): Promise<void> }> {
  return acquire(ctx, 'auth-steps-legate', async () => {
    const opa = process.env['LEGATE_OPA'] || path.join(ctx.root, '.cache/opa/bin/opa');
    if (!SLAPD) throw new ScenarioSkipped('slapd is not installed (make setup)');
    if (!fs.existsSync(opa)) throw new ScenarioSkipped('no opa binary (make opa)');
    // legate run's extauth compiles opaAuth policies with it
    process.env['LEGATE_OPA'] = opa;
    const ldap = await startLdap({ suffix: 'dc=solo,dc=io', ldif: GLOO_GUIDE_LDIF });
    try {
      const up = await ctx.upstream();
      const policy = POLICY.split('\n')
        .map((l) => `    ${l}`)
        .join('\n');
      const files = {
        'upstream.yaml': upstreamYaml(up.port),
        'auth.yaml': `apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: bench-ldap, namespace: legate-system }
spec:
  configs:
  - ldap:
      address: "ldap://127.0.0.1:${ldap.port}"
      userDnTemplate: "uid=%s,ou=people,dc=solo,dc=io"
      allowedGroups: ["cn=managers,ou=groups,dc=solo,dc=io"]
---
apiVersion: v1
kind: ConfigMap
metadata: { name: bench-policy, namespace: legate-system }
data:
  policy.rego: |
${policy}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: bench-opa, namespace: legate-system }
spec:
  configs:
  - opaAuth:
      modules: [{ name: bench-policy, namespace: legate-system }]
      query: "data.bench.allow == true"
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: bench-basic, namespace: legate-system }
spec:
  configs:
  - basicAuth:
      apr: { users: { user: { salt: "TYiryv0/", hashedPassword: "8BvzLUO9IfGPGGsPnAgSu1" } } }
`,
        'vs.yaml': vsWithRoutesYaml('auth-steps', [
          routeYaml('/open'),
          routeYaml('/ldap', 'bench-ldap'),
          routeYaml('/opa', 'bench-opa'),
          routeYaml('/basic', 'bench-basic'),
        ]),
      };
      const gw = await startLegate(ctx, 'auth-steps', files, ctx.settings.serverCpus);
      try {
        const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
        await untilServed(gw.ports.http, '/open/bench', undefined, up.body, 30_000, 100, dead);
        for (const [route, authorization] of [
          ['/ldap/bench', RICK],
          ['/opa/bench', ''],
          ['/basic/bench', USER],
        ] as const) {
          const headers = authorization ? { authorization } : undefined;
          await waitFor(
            `${route} to let the request through`,
            async () => {
              const r = await send(gw.ports.http, { path: route, ...(headers ? { headers } : {}) });
              return r.status === 200 && r.text === up.body ? true : undefined;
            },
            { timeoutMs: 60_000, intervalMs: 200, abortIf: dead },
          );
        }
        return {
          gw,
          up,
          ldap,
          stop: async () => {
            await gw.stop();
            await ldap.close();
          },
        };
      } catch (err) {
        await gw.stop();
        throw err;
      }
    } catch (err) {
      await ldap.close();
      throw err;
    }
  });
}

function stepScenario(o: {
  name: string;
  description: string;
  route: string;
  authorization?: string;
  compareTo: string[];
  aims?: Record<string, number>;
}): LoadScenario {
  return {
    kind: 'load',
    name: o.name,
    description: o.description,
    compareTo: o.compareTo,
    ...(o.aims ? { aims: o.aims } : {}),
    async setup(ctx): Promise<LoadTarget> {
      const g = await gateway(ctx);
      return {
        port: g.value.gw.ports.http,
        path: `${o.route}/bench`,
        ...(o.authorization ? { request: { headers: { authorization: o.authorization } } } : {}),
        processes: [...legateProcesses(g.value.gw), { label: 'upstream', role: 'upstream', pid: g.value.up.pid }],
        counters: async () => ({
          'ext_authz checks': (await envoyStats(g.value.gw.ports.admin, [EXT_AUTHZ_CALLS]))[EXT_AUTHZ_CALLS]!,
        }),
        notes: [],
        stop: () => g.release(),
      };
    },
  };
}

export const authStepsUnprotected = stepScenario({
  name: 'auth-steps-unprotected',
  description: 'GET through Legate on a route without auth, in the same legate run as auth-ldap and auth-opa: their pair',
  route: '/open',
  authorization: RICK,
  compareTo: ['legate-route'],
});

export const authLdap = stepScenario({
  name: 'auth-ldap',
  description:
    "GET on a route protected by an ldap AuthConfig (Gloo's guide, slapd on loopback), one user's Basic credentials: " +
    'the step’s 10 s outcome granted to the edge cache (credential-check) as long, so an ext_authz Check and a bind every 10 s',
  route: '/ldap',
  authorization: RICK,
  compareTo: ['auth-steps-unprotected'],
  aims: { 'auth-steps-unprotected': 0.5 },
});

export const authOpa = stepScenario({
  name: 'auth-opa',
  description:
    'GET on a route protected by an opaAuth AuthConfig (a Rego policy from a ConfigMap): an ext_authz Check per request, ' +
    'the policy evaluated as wasm inside extauth',
  route: '/opa',
  compareTo: ['auth-steps-unprotected'],
  aims: { 'auth-steps-unprotected': 0.5 },
});

export const authBasic = stepScenario({
  name: 'auth-basic',
  description:
    'GET on a route protected by basicAuth (apr1): the credential verified once, remembered a minute and granted to the edge cache as long',
  route: '/basic',
  authorization: USER,
  compareTo: ['auth-steps-unprotected'],
});
