// passThroughAuth as AuthSteps (../passthrough.ts): the user's own server decides, over gRPC (ext_authz) or
// HTTP. Its allow may add upstream headers; its denial is the client's answer (status, headers, body). A
// server unreachable, too slow or failing is `unavailable` (logged at most every 10 s), or an allow with
// failureModeAllow.
import type { PassThroughGrpcStepConfig, PassThroughHttpStepConfig } from '../../../common/auth-config.js';
import type { Logger } from '../../../common/log.js';
import type { Outcome } from '../outcome.js';
import { askGrpcPassThrough, askHttpPassThrough, type PassThroughAnswer, type PassThroughRequest } from '../passthrough.js';
import { denyWith, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

const ERROR_LOG_EVERY_MS = 10_000;

export class PassThroughStep implements AuthStep {
  readonly bearer = false;
  readonly readsState = true;
  readonly summary: StepSummary;
  private lastErrorLogAt = 0;

  constructor(
    private readonly config: PassThroughGrpcStepConfig | PassThroughHttpStepConfig,
    private readonly log: Logger,
  ) {
    this.summary =
      config.type === 'passthrough-grpc' ? { type: config.type, address: config.address } : { type: config.type, url: config.url };
  }

  decideNow(): undefined {
    return undefined;
  }

  async decide(_token: string, _hash: string, hold: Hold, configId: string): Promise<Outcome> {
    hold.until = 0;
    const r = hold.request;
    const req: PassThroughRequest = {
      method: r.method,
      path: r.path,
      host: r.host,
      scheme: r.scheme,
      headers: r.allHeaders,
      ...(r.body !== undefined ? { body: r.body } : {}),
      filterMetadata: r.filterMetadata,
    };
    const c = this.config;
    const state = hold.state ?? {};
    const answer: PassThroughAnswer =
      c.type === 'passthrough-grpc'
        ? await askGrpcPassThrough(c, req, state, { config_id: configId })
        : await askHttpPassThrough(c, req, state);
    if ('error' in answer) {
      const now = Date.now();
      if (now - this.lastErrorLogAt >= ERROR_LOG_EVERY_MS) {
        this.lastErrorLogAt = now;
        this.log.error(
          c.failureModeAllow ? 'passthrough auth server failed; allowing (failureModeAllow)' : 'passthrough auth server failed; denying',
          {
            config_id: configId,
            server: c.type === 'passthrough-grpc' ? c.address : c.url,
            error: answer.error,
          },
        );
      }
      if (c.failureModeAllow) return 'allow';
      hold.detail = 'passthrough server unavailable';
      return 'unavailable';
    }
    if (answer.allow) {
      // the server's state (readStateFromResponse, or gRPC's solo.auth.passthrough metadata) is later steps' state
      if (answer.state !== undefined && hold.state !== undefined) Object.assign(hold.state, answer.state);
      const headers = [
        ...Object.entries(answer.set).map(([name, value]) => ({ name, value })),
        ...Object.entries(answer.append).map(([name, value]) => ({ name, value, append: true })),
      ];
      if (headers.length) ((hold.answer ??= {}).upstreamHeaders ??= []).push(...headers);
      return 'allow';
    }
    hold.detail = `passthrough server denied (${answer.status})`;
    denyWith(hold, {
      status: answer.status,
      headers: Object.entries(answer.headers).map(([name, value]) => ({ name, value })),
      body: answer.body,
    });
    return 'access_denied';
  }
}

export const passThroughStep: StepFactory<PassThroughGrpcStepConfig | PassThroughHttpStepConfig> = (config, ctx) =>
  new PassThroughStep(config, ctx.log);
