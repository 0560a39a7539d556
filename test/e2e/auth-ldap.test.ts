// The ldap step end to end against a real OpenLDAP (Debian slapd, started for this file with the users
// and groups of Gloo's LDAP guide): the guide's AuthConfig unchanged but for the address, and one with a
// group-lookup service account from a Secret. The server going away denies (never allows) with the reason
// logged, and requests pass again once it is back, without restarting anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { GLOO_GUIDE_LDIF, SLAPD, startLdap, type LdapServer } from '../support/ldap.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
let ldap: LdapServer;

describe.skipIf(!SLAPD)('ldap against slapd', () => {
  beforeAll(async () => {
    ldap = await startLdap({ suffix: 'dc=solo,dc=io', ldif: GLOO_GUIDE_LDIF, rootPassword: 'solopwd' });
    app = await startEcho('app');
    gw = await startGateway({
      'auth.yaml': `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ldap, namespace: legate-system }
spec:
  configs:
  - ldap:
      address: "ldap://127.0.0.1:${ldap.port}"
      userDnTemplate: "uid=%s,ou=people,dc=solo,dc=io"
      allowedGroups:
      - "cn=managers,ou=groups,dc=solo,dc=io"
---
apiVersion: v1
kind: Secret
metadata: { name: ldap-sa, namespace: legate-system }
type: extauth.solo.io/credentials
stringData: { username: "cn=admin,dc=solo,dc=io", password: solopwd }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ldap-sales, namespace: legate-system }
spec:
  configs:
  - ldap:
      address: "127.0.0.1:${ldap.port}"
      userDnTemplate: "uid=%s,ou=people,dc=solo,dc=io"
      allowedGroups: ["cn=sales,ou=groups,dc=solo,dc=io"]
      pool: { maxSize: 2, initialSize: 1 }
      groupLookupSettings:
        checkGroupsWithServiceAccount: true
        credentialsSecretRef: { name: ldap-sa, namespace: legate-system }
---
${appBehindAuth(app.port, [
  ['/sales', 'ldap-sales'],
  ['/echo', 'ldap'],
])}
`,
    });
    await gw.until('/public', (r) => r.status === 200, {}, 30_000);
    await gw.until('/echo', (r) => r.status === 200, { headers: { authorization: 'Basic cmljazpyaWNrcHdk' } });
  }, 90_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
    await ldap?.close();
  });

  it("answers as Gloo's guide: 401 without a header or for an unknown user, 403 for a developer, 200 for a manager", async () => {
    expect((await gw.request('/echo')).status).toBe(401);
    expect((await gw.request('/echo', { headers: { authorization: 'Basic am9objpkb2U=' } })).status).toBe(401);
    expect((await gw.request('/echo', { headers: { authorization: 'Basic bWFyY286bWFyY29wd2Q=' } })).status).toBe(403);
    const rick = await gw.request('/echo', { headers: { authorization: 'Basic cmljazpyaWNrcHdk' } });
    expect(rick.status).toBe(200);
    expect(rick.json()['upstream']).toBe('app');
    // a wrong password for a known user, and an empty one (an unauthenticated bind), are refused
    const wrong = Buffer.from('rick:nope').toString('base64');
    expect((await gw.request('/echo', { headers: { authorization: `Basic ${wrong}` } })).status).toBe(401);
    const empty = Buffer.from('rick:').toString('base64');
    expect((await gw.request('/echo', { headers: { authorization: `Basic ${empty}` } })).status).toBe(401);
  });

  it("reuses an allow at the edge while extauth's outcome cache holds it: a repeat request costs no ext_authz call", async () => {
    const stat = async (name: string): Promise<number> => {
      const filter = encodeURIComponent(`^${name.replace(/\./g, '\\.')}$`);
      const m = /: (\d+)/.exec(await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${filter}`)).text());
      return m ? Number(m[1]) : 0;
    };
    const rick = { authorization: `Basic ${Buffer.from('rick:rickpwd').toString('base64')}` };
    // a fresh credential spelling (lower-case scheme): its own grant, parsed by extauth as the same user
    const fresh = { authorization: rick.authorization.replace('Basic', 'basic') };
    const calls = await stat('cluster.legate-extauth.upstream_rq_total');
    expect((await gw.request('/echo', { headers: fresh })).status).toBe(200);
    expect((await gw.request('/echo', { headers: fresh })).status).toBe(200);
    expect((await stat('cluster.legate-extauth.upstream_rq_total')) - calls).toBe(1);
    // the bearer pre-check never applies here: no credential is still extauth's 401, not a 403
    expect((await gw.request('/echo')).status).toBe(401);
  });

  it('checks groups with the service account from a Secret (scottc is in sales, rick is not)', async () => {
    const scott = Buffer.from('scottc:scottcpwd').toString('base64');
    expect((await gw.request('/sales', { headers: { authorization: `Basic ${scott}` } })).status).toBe(200);
    expect((await gw.request('/sales', { headers: { authorization: 'Basic cmljazpyaWNrcHdk' } })).status).toBe(403);
  });

  it('fails closed while the server is down (reason logged, never the password) and recovers without a restart', async () => {
    await ldap.stop();
    // marco's outcome is not cached: every attempt asks the (absent) server
    const marco = Buffer.from('marco:othermarco').toString('base64');
    const down = await gw.request('/echo', { headers: { authorization: `Basic ${marco}` } });
    expect(down.status).toBe(403);
    expect(down.text).toContain('temporarily_unavailable');
    const log = gw.log('extauth');
    expect(log).toMatch(/ldap/i);
    expect(log).not.toContain('othermarco');
    expect(log).not.toContain(marco);
    await ldap.start();
    const scott = Buffer.from('scottc:scottcpwd').toString('base64');
    await gw.until('/sales', (r) => r.status === 200, { headers: { authorization: `Basic ${scott}` } }, 20_000);
  }, 60_000);
});
