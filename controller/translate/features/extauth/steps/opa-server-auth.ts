// `opaServerAuth` steps (the checks are in resolvers.ts, shared with the other step kinds read from Secrets and ConfigMaps).
import type { AuthStepConfig } from '../../../../../common/auth-config.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { checkStep, type StepResolveContext } from './common.js';
import { opaServerStep } from './resolvers.js';

export function resolveOpaServerAuth(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.opaServerAuth`;
  const out = opaServerStep(raw as NonNullable<AuthStep['opaServerAuth']>, where, ctx.problems);
  if (!out) return undefined;
  const step = { ...out, ...ctx.named };
  return checkStep(step, where, ctx.problems) ? step : undefined;
}
