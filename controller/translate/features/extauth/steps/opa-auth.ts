// `opaAuth` steps (the checks are in resolvers.ts, shared with the other step kinds read from Secrets and ConfigMaps).
import type { AuthStepConfig } from '../../../../../common/auth-config.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { checkStep, type StepResolveContext } from './common.js';
import { opaStep, refsOf } from './resolvers.js';

export function resolveOpaAuth(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.opaAuth`;
  const out = opaStep(raw as NonNullable<AuthStep['opaAuth']>, where, refsOf(ctx), ctx.problems);
  if (!out) return undefined;
  const step = { ...out, ...ctx.named };
  if (!checkStep(step, where, ctx.problems)) return undefined;
  // what extauth would refuse (and then deny every request with) is a reason on the AuthConfig instead
  const checked = ctx.regoCheck?.(step.modules, step.query);
  if (checked && 'error' in checked) {
    ctx.problems.push({ code: 'InvalidSpec', message: `${where}: the Rego does not compile: ${checked.error}` });
    return undefined;
  }
  // Envoy then sends extauth only these headers (unchecked, or read dynamically: all of them)
  return checked && checked.headers !== '*' ? { ...step, headers: [...checked.headers] } : step;
}
