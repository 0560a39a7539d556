// basicAuth as an AuthStep: Basic credentials (`Authorization`, else `Proxy-Authorization` as Gloo's extended
// form accepts) checked against the user's salted hash (apr1 or sha1, ../passwords.ts). A bad or missing
// credential is 401 with `WWW-Authenticate: Basic realm="<realm>"`. apr1 costs 1000 MD5 rounds, so a verified
// credential is remembered a minute (by a digest of user and password, never the password), and an allow on the
// Authorization header is offered to Envoy's edge cache for as long (docs/wasm.md).
import { createHash } from 'node:crypto';
import type { BasicAuthStepConfig } from '../../../common/auth-config.js';
import type { Outcome } from '../outcome.js';
import { parseBasic, verifyPassword } from '../passwords.js';
import { denyWith, setUserId, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

const VERIFIED_MS = 60_000;
const VERIFIED_MAX = 10_000;

export class BasicAuthStep implements AuthStep {
  readonly bearer = false;
  readonly summary: StepSummary;
  private readonly users: ReadonlyMap<string, { salt: string; hashedPassword: string }>;
  private readonly verified = new Map<string, number>();
  private readonly challenge: string;

  constructor(private readonly config: BasicAuthStepConfig) {
    this.users = new Map(Object.entries(config.users));
    this.challenge = `Basic realm="${config.realm.replace(/["\\]/g, '\\$&')}"`;
    // user names and counts, never hashes
    this.summary = { type: config.type, encryption: config.encryption, realm: config.realm, users: this.users.size };
  }

  get cacheSize(): number {
    return this.verified.size;
  }

  decideNow(_token: string, _hash: string, now: number, hold: Hold): Outcome {
    const req = hold.request;
    const fromAuthorization = parseBasic(req.authorization);
    const creds = fromAuthorization ?? parseBasic(req.header('proxy-authorization'));
    if (!creds) return this.deny(hold, 'no Basic credentials');
    // Envoy's edge cache keys on the Authorization value: a Proxy-Authorization credential is never offered
    const grant = (until: number): void => {
      const at = fromAuthorization !== undefined ? until : 0;
      if (at < hold.until) hold.until = at;
    };
    const user = this.users.get(creds.user);
    const key = createHash('sha256').update(creds.user).update('\0').update(creds.password).digest('base64');
    const until = this.verified.get(key);
    if (until !== undefined && until > now) {
      grant(until);
      setUserId(hold, creds.user);
      return 'allow';
    }
    // an unknown user costs a hash too, so the time does not tell which users exist
    const stored = user ?? { salt: 'unknown-user', hashedPassword: '' };
    const ok = verifyPassword(this.config.encryption, creds.password, stored.salt, stored.hashedPassword) && user !== undefined;
    if (!ok) return this.deny(hold, user ? 'wrong password' : 'unknown user');
    if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
    this.verified.set(key, now + VERIFIED_MS);
    grant(now + VERIFIED_MS);
    setUserId(hold, creds.user);
    return 'allow';
  }

  decide(token: string, hash: string, hold: Hold): Promise<Outcome> {
    return Promise.resolve(this.decideNow(token, hash, Date.now(), hold));
  }

  sweep(now: number): void {
    for (const [k, until] of this.verified) if (until <= now) this.verified.delete(k);
  }

  private deny(hold: Hold, detail: string): Outcome {
    hold.detail = detail;
    denyWith(hold, { status: 401, headers: [{ name: 'www-authenticate', value: this.challenge }], body: '' });
    return 'invalid_credentials';
  }
}

export const basicAuthStep: StepFactory<BasicAuthStepConfig> = (config) => new BasicAuthStep(config);
