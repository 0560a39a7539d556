// Gloo's `jwt: {}` step: no keys of its own; it allows when Envoy's JWT filter (options.jwt / jwtStaged
// beforeExtAuth on the virtual host or route) verified a token of the request, whose payload Envoy sends
// with the check (ext_authz metadata_context_namespaces, set when a bound config has this step). With
// Gloo's allowMissingOrFailedJwt the filter lets a request without a good token reach ext_authz, and the
// booleanExpr decides (`jwt || apikey`).
import type { AuthStepConfig } from '../../../../../common/auth-config.js';
import { checkStep, type StepResolveContext } from './common.js';

export function resolveJwt(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.jwt`;
  if (raw !== null && (typeof raw !== 'object' || Array.isArray(raw) || Object.keys(raw).length > 0)) {
    ctx.problems.push({ code: 'InvalidSpec', message: `${where}: Gloo's jwt step takes no fields (write jwt: {})` });
    return undefined;
  }
  const step = { type: 'envoy-jwt' as const, ...ctx.named };
  return checkStep(step, where, ctx.problems) ? step : undefined;
}
