// The auth step kinds extauth builds, by the `type` of their resolved config (common/auth-config.ts). Adding a
// kind: its schema in common/auth-config.ts, a file here exporting a StepFactory, and one line below (the
// mapped type makes a schema type without a factory a compile error).
import type { AuthStepConfig } from '../../../common/auth-config.js';
import type { StepFactory } from '../step.js';
import { apiKeyStep } from './api-key.js';
import { codeFlowStep } from './oauth2-code.js';
import { introspectionStep } from './oauth2-introspection.js';
import { jwtStep } from './oauth2-jwt.js';
import { basicAuthStep } from './basic-auth.js';
import { hmacStep } from './hmac.js';
import { ldapStep } from './ldap.js';
import { opaServerStep, opaStep } from './opa.js';
import { passThroughStep } from './passthrough.js';
import { envoyJwtStep } from './envoy-jwt.js';
import { UserInfo, WithUserInfo } from '../userinfo.js';

export const STEP_FACTORIES: { readonly [K in AuthStepConfig['type']]: StepFactory<Extract<AuthStepConfig, { type: K }>> } = {
  'oauth2-introspection': introspectionStep,
  'oauth2-jwt': jwtStep,
  'api-key': apiKeyStep,
  'basic-auth': basicAuthStep,
  ldap: ldapStep,
  opa: opaStep,
  'opa-server': opaServerStep,
  'passthrough-grpc': passThroughStep,
  'passthrough-http': passThroughStep,
  hmac: hmacStep,
  'oauth2-code': codeFlowStep,
  'envoy-jwt': envoyJwtStep,
};

/** Builds the step of `config` with its kind's factory. */
export function buildStep(config: AuthStepConfig, ctx: Parameters<StepFactory>[1]): ReturnType<StepFactory> {
  const step = (STEP_FACTORIES[config.type] as StepFactory)(config, ctx);
  if ((config.type !== 'oauth2-introspection' && config.type !== 'oauth2-jwt') || config.userinfoUrl === undefined) return step;
  const url = config.userinfoUrl;
  const userinfo = ctx.pool.get(
    `userinfo:${url}`,
    () => new UserInfo(url, ctx.settings.introspectionTimeoutMs, ctx.settings.cacheMaxEntries),
    (u) => u.clear(),
  );
  return new WithUserInfo(step, userinfo, config.cacheTimeoutMs, ctx.log);
}
