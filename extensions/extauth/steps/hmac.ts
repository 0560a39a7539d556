// hmacAuth as an AuthStep: the request's HMAC signature (parameters in the Authorization header,
// ../hmac.ts) must verify with the shared secret of its user. Anything else is 401.
import type { HmacStepConfig } from '../../../common/auth-config.js';
import { verifyHmac } from '../hmac.js';
import type { Outcome } from '../outcome.js';
import { denyWith, setUserId, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

export class HmacStep implements AuthStep {
  readonly bearer = false;
  readonly summary: StepSummary;

  constructor(private readonly config: HmacStepConfig) {
    this.summary = { type: config.type, users: Object.keys(config.credentials).length };
  }

  decideNow(_token: string, _hash: string, now: number, hold: Hold): Outcome {
    hold.until = 0;
    const req = hold.request;
    const { verdict, user } = verifyHmac(
      req.authorization,
      { method: req.method, path: req.path, headers: req.allHeaders },
      this.config.credentials,
      now,
    );
    if (verdict === 'ok') {
      if (user !== undefined) setUserId(hold, user);
      return 'allow';
    }
    hold.detail = user === undefined ? `hmac: ${verdict}` : `hmac: ${verdict} (user ${JSON.stringify(user.slice(0, 64))})`;
    denyWith(hold, { status: 401, headers: [{ name: 'content-type', value: 'application/json' }], body: '{"error":"invalid_signature"}' });
    return 'invalid_credentials';
  }

  decide(token: string, hash: string, hold: Hold): Promise<Outcome> {
    return Promise.resolve(this.decideNow(token, hash, Date.now(), hold));
  }
}

export const hmacStep: StepFactory<HmacStepConfig> = (config) => new HmacStep(config);
