// `ldap` steps (the checks are in resolvers.ts, shared with the other step kinds read from Secrets and ConfigMaps).
import type { AuthStepConfig } from '../../../../../common/auth-config.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { checkStep, type StepResolveContext } from './common.js';
import { ldapStep, refsOf } from './resolvers.js';

export function resolveLdap(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.ldap`;
  const out = ldapStep(raw as NonNullable<AuthStep['ldap']>, where, refsOf(ctx), ctx.problems);
  if (!out) return undefined;
  const step = { ...out, ...ctx.named };
  return checkStep(step, where, ctx.problems) ? step : undefined;
}
