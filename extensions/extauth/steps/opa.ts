// opaAuth and opaServerAuth as AuthSteps (../opa.ts). opaAuth: the policy compiled to wasm when the config
// loads and evaluated in-process (synchronously once compiled); a policy that does not compile denies every
// request of the config, logged once. opaServerAuth: the OPA server asked per request; unreachable is
// `unavailable` (denied, logged at most every 10 s).
import type { OpaServerStepConfig, OpaStepConfig } from '../../../common/auth-config.js';
import type { Logger } from '../../../common/log.js';
import { OpaWasmPolicy, askOpaServer, opaInput, opaInputJson, type OpaHttpRequest } from '../opa.js';
import type { Outcome } from '../outcome.js';
import type { AuthRequest } from '../request.js';
import type { AuthStep, Hold, StepFactory, StepSummary } from '../step.js';

const ERROR_LOG_EVERY_MS = 10_000;
const OPA_SERVER_TIMEOUT_MS = 2_000;

function httpRequest(req: AuthRequest): OpaHttpRequest {
  const body = req.body;
  return {
    method: req.method,
    path: req.path,
    host: req.host,
    scheme: req.scheme,
    headers: req.allHeaders,
    ...(body !== undefined ? { body } : {}),
  };
}

/** Gloo's input document; `state`: what earlier steps of the check found (`input.state.jwt`, …). */
function input(req: AuthRequest, state: Record<string, unknown> = {}): Record<string, unknown> {
  return opaInput(httpRequest(req), state);
}

export class OpaStep implements AuthStep {
  readonly bearer = false;
  readonly readsState = true;
  readonly summary: StepSummary;
  private policy: OpaWasmPolicy | undefined;
  private failed: string | undefined;
  private readonly ready: Promise<void>;

  constructor(config: OpaStepConfig, log: Logger, configName: string) {
    this.summary = { type: config.type, query: config.query, modules: Object.keys(config.modules) };
    this.ready = OpaWasmPolicy.load(config.modules, config.query).then(
      (p) => {
        this.policy = p;
        log.info('OPA policy compiled', { config_id: configName });
      },
      (err: unknown) => {
        this.failed = err instanceof Error ? err.message : String(err);
        log.error('OPA policy does not compile; its requests are denied', { config_id: configName, error: this.failed });
      },
    );
  }

  decideNow(_token: string, _hash: string, _now: number, hold: Hold): Outcome | undefined {
    hold.until = 0;
    if (this.failed !== undefined) {
      hold.detail = 'opa: the policy does not compile';
      return 'access_denied';
    }
    if (!this.policy) return undefined;
    try {
      if (this.policy.evaluateJson(opaInputJson(httpRequest(hold.request), hold.state))) return 'allow';
      hold.detail = 'opa: the query is not true';
    } catch (err) {
      // opa-wasm throws plain objects ({message: 'not implemented: built-in function …'})
      const message = (err as { message?: unknown } | null)?.message;
      hold.detail = `opa: evaluation failed (${typeof message === 'string' ? message.slice(0, 100) : 'error'})`;
    }
    return 'access_denied';
  }

  async decide(token: string, hash: string, hold: Hold): Promise<Outcome> {
    await this.ready;
    return this.decideNow(token, hash, Date.now(), hold) ?? 'access_denied';
  }
}

export class OpaServerStep implements AuthStep {
  readonly bearer = false;
  readonly readsState = true;
  readonly summary: StepSummary;
  private lastErrorLogAt = 0;

  constructor(
    private readonly config: OpaServerStepConfig,
    private readonly log: Logger,
  ) {
    this.summary = { type: config.type, url: config.url };
  }

  decideNow(): undefined {
    return undefined;
  }

  async decide(_token: string, _hash: string, hold: Hold, configId: string): Promise<Outcome> {
    hold.until = 0;
    const answer = await askOpaServer(this.config.url, input(hold.request, hold.state), OPA_SERVER_TIMEOUT_MS);
    if ('error' in answer) {
      const now = Date.now();
      if (now - this.lastErrorLogAt >= ERROR_LOG_EVERY_MS) {
        this.lastErrorLogAt = now;
        this.log.error('OPA server unavailable; denying', { config_id: configId, opa_url: this.config.url, error: answer.error });
      }
      hold.detail = 'opa server unavailable';
      return 'unavailable';
    }
    if (answer.allowed) return 'allow';
    hold.detail = 'opa: the decision is not true';
    return 'access_denied';
  }
}

export const opaStep: StepFactory<OpaStepConfig> = (config, ctx) => new OpaStep(config, ctx.log, ctx.configName);
export const opaServerStep: StepFactory<OpaServerStepConfig> = (config, ctx) => new OpaServerStep(config, ctx.log);
