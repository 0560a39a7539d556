// `hmacAuth` steps (the checks are in resolvers.ts, shared with the other step kinds read from Secrets and ConfigMaps).
import type { AuthStepConfig } from '../../../../../common/auth-config.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { checkStep, type StepResolveContext } from './common.js';
import { hmacStep, refsOf } from './resolvers.js';

export function resolveHmacAuth(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.hmacAuth`;
  const out = hmacStep(raw as NonNullable<AuthStep['hmacAuth']>, where, refsOf(ctx), ctx.problems);
  if (!out) return undefined;
  const step = { ...out, ...ctx.named };
  return checkStep(step, where, ctx.problems) ? step : undefined;
}
