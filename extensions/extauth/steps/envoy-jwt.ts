// Gloo's `jwt: {}` step: allows when Envoy's JWT filter verified a token of this request. The filter puts each
// verified payload in its dynamic metadata (payload_in_metadata, namespace envoy.filters.http.jwt_authn), which
// ext_authz sends with the check (metadata_context_namespaces); a missing or failed token leaves none there
// (the filter passed the request on only because of allowMissingOrFailedJwt). The payload is the check's state
// `jwtAccessToken` (the claims, as the oauth2 JWT step's), for opaAuth and passThroughAuth.
import { JWT_AUTHN_METADATA, type EnvoyJwtStepConfig } from '../../../common/auth-config.js';
import type { Outcome } from '../outcome.js';
import { setState, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

export class EnvoyJwtStep implements AuthStep {
  readonly bearer = false;
  readonly summary: StepSummary = { type: 'envoy-jwt' };

  decideNow(_token: string, _hash: string, _now: number, hold: Hold): Outcome {
    hold.until = 0;
    const verified = hold.request.filterMetadata[JWT_AUTHN_METADATA];
    if (verified !== undefined)
      for (const payload of Object.values(verified)) {
        if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) continue;
        setState(hold, 'jwtAccessToken', payload);
        return 'allow';
      }
    hold.detail = "Envoy's JWT filter verified no token";
    return 'missing_token';
  }

  decide(token: string, hash: string, hold: Hold): Promise<Outcome> {
    return Promise.resolve(this.decideNow(token, hash, Date.now(), hold));
  }
}

export const envoyJwtStep: StepFactory<EnvoyJwtStepConfig> = () => new EnvoyJwtStep();
