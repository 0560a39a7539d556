// ldap as an AuthStep: the Basic credentials bind to the LDAP server and the user's groups decide
// (../ldap.ts). Bad credentials 401, no allowed group 403; the server unreachable is `unavailable` (denied,
// logged at most every 10 s per server, never with the credential). The connection pool of a server is
// shared by every step naming it (SharedPool).
import type { LdapStepConfig } from '../../../common/auth-config.js';
import type { Logger } from '../../../common/log.js';
import { LdapAuthenticator, LdapPool, type LdapVerdict } from '../ldap.js';
import type { Outcome } from '../outcome.js';
import { parseBasic } from '../passwords.js';
import { denyWith, setUserId, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

const ERROR_LOG_EVERY_MS = 10_000;

export class LdapStep implements AuthStep {
  readonly bearer = false;
  readonly summary: StepSummary;
  private lastErrorLogAt = 0;

  constructor(
    private readonly config: LdapStepConfig,
    private readonly auth: LdapAuthenticator,
    private readonly log: Logger,
  ) {
    this.summary = {
      type: config.type,
      url: config.url,
      userDnTemplate: config.userDnTemplate,
      allowedGroups: config.allowedGroups,
      disableGroupChecking: config.disableGroupChecking,
      serviceAccount: config.serviceAccount !== undefined,
    };
  }

  decideNow(_token: string, _hash: string, now: number, hold: Hold): Outcome | undefined {
    const creds = parseBasic(hold.request.authorization);
    if (!creds) return this.judge({ verdict: 'invalid_credentials' }, hold);
    const hit = this.auth.cachedEntry(creds.user, creds.password, now);
    if (!hit) return undefined;
    // an allow holds as long as its cached outcome: Envoy's edge cache may reuse it that long (keyed on Authorization)
    if (hit.until < hold.until) hold.until = hit.until;
    return this.judge(hit.verdict, hold, creds.user);
  }

  async decide(_token: string, _hash: string, hold: Hold, configId: string): Promise<Outcome> {
    const creds = parseBasic(hold.request.authorization);
    if (!creds) return this.judge({ verdict: 'invalid_credentials' }, hold);
    const verdict = await this.auth.authenticate(creds.user, creds.password);
    const until = this.auth.cachedEntry(creds.user, creds.password)?.until ?? 0;
    if (until < hold.until) hold.until = until;
    if (verdict.verdict === 'unavailable') {
      const now = Date.now();
      if (now - this.lastErrorLogAt >= ERROR_LOG_EVERY_MS) {
        this.lastErrorLogAt = now;
        this.log.error('LDAP server unavailable; denying', { config_id: configId, ldap_url: this.config.url, error: verdict.detail });
      }
    }
    return this.judge(verdict, hold, creds.user);
  }

  sweep(now: number): void {
    this.auth.sweep(now);
  }

  private judge(v: LdapVerdict, hold: Hold, user?: string): Outcome {
    switch (v.verdict) {
      case 'allow':
        if (user !== undefined) setUserId(hold, user);
        return 'allow';
      case 'forbidden':
        hold.detail = 'ldap: in none of allowedGroups';
        return 'access_denied';
      case 'invalid_credentials':
        hold.detail = 'ldap: no or bad credentials';
        denyWith(hold, { status: 401, headers: [{ name: 'www-authenticate', value: 'Basic realm=""' }], body: '' });
        return 'invalid_credentials';
      default:
        hold.detail = 'ldap server unavailable';
        return 'unavailable';
    }
  }
}

export const ldapStep: StepFactory<LdapStepConfig> = (config, ctx) => {
  const key = `ldap:${config.url}:${config.pool.maxSize}:${config.pool.initialSize}`;
  const pool = ctx.pool.get(
    key,
    () => new LdapPool(config.url, config.pool.maxSize, config.pool.initialSize),
    (p) => p.close(),
  );
  return new LdapStep(config, new LdapAuthenticator(config, pool), ctx.log);
};
