// accessTokenValidation.userinfoUrl: once the access token is valid, the provider's userinfo answer for it
// (GET with `Authorization: Bearer <token>`) goes into the check's state under `introspection`, as Gloo puts
// it, for later steps (opaAuth's input.state, passThroughAuth's state). Answers are kept per token hash for
// the step's cacheTimeout, as the introspection answers. An unreachable or failing endpoint denies
// (`unavailable`), never an allow without the state a later step may need.
import { ExpiringCache } from './cache.js';
import { redactUrl, tokenRef } from './introspect.js';
import type { Logger } from '../../common/log.js';
import type { Outcome } from './outcome.js';
import { setState, type AuthStep, type Hold, type StepCounters, type StepSummary } from './step.js';

const ERROR_LOG_EVERY_MS = 10_000;

interface Answer {
  readonly deadAt: number;
  readonly doc: Record<string, unknown>;
}

/** One userinfo endpoint: its answers by token hash, and the calls in flight (one per token). */
export class UserInfo {
  private readonly cache: ExpiringCache<Answer>;
  private readonly inflight = new Map<string, Promise<Record<string, unknown>>>();

  constructor(
    readonly url: string,
    private readonly timeoutMs: number,
    maxEntries: number,
  ) {
    this.cache = new ExpiringCache<Answer>(maxEntries);
  }

  cached(hash: string, now: number): Record<string, unknown> | undefined {
    return this.cache.get(hash, now)?.doc;
  }

  /** The answer for `token`; throws (without the token in the message) when the endpoint fails. */
  fetch(token: string, hash: string, cacheMs: number): Promise<Record<string, unknown>> {
    const running = this.inflight.get(hash);
    if (running) return running;
    const call = (async (): Promise<Record<string, unknown>> => {
      const res = await fetch(this.url, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`the userinfo endpoint answered ${res.status}`);
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch {
        throw new Error('the userinfo answer is not JSON');
      }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('the userinfo answer is not a JSON object');
      const answer = doc as Record<string, unknown>;
      if (cacheMs > 0) this.cache.set(hash, { deadAt: Date.now() + cacheMs, doc: answer });
      return answer;
    })().finally(() => this.inflight.delete(hash));
    this.inflight.set(hash, call);
    return call;
  }

  sweep(now: number): void {
    this.cache.sweep(now);
  }

  clear(): void {
    this.cache.clear();
  }
}

/** A bearer step (introspection or JWT) followed by the userinfo fetch once it allows. */
export class WithUserInfo implements AuthStep {
  readonly bearer: boolean;
  readonly summary: StepSummary;
  private lastErrorLogAt = 0;

  constructor(
    private readonly inner: AuthStep,
    private readonly userinfo: UserInfo,
    private readonly cacheMs: number,
    private readonly log: Logger,
  ) {
    this.bearer = inner.bearer;
    this.summary = { ...inner.summary, userinfoUrl: redactUrl(userinfo.url) };
  }

  get counters(): Readonly<StepCounters> | undefined {
    return this.inner.counters;
  }

  get cacheSize(): number | undefined {
    return this.inner.cacheSize;
  }

  decideNow(token: string, hash: string, now: number, hold: Hold): Outcome | undefined {
    const doc = this.userinfo.cached(hash, now);
    if (doc === undefined) return undefined; // the inner step runs again in decide(), with the fetch after it
    const verdict = this.inner.decideNow(token, hash, now, hold);
    if (verdict === 'allow') {
      setState(hold, 'introspection', doc);
      hold.until = 0; // the edge cache would skip the steps that read the state
    }
    return verdict;
  }

  async decide(token: string, hash: string, hold: Hold, configId: string): Promise<Outcome> {
    const verdict = this.inner.decideNow(token, hash, Date.now(), hold) ?? (await this.inner.decide(token, hash, hold, configId));
    if (verdict !== 'allow') return verdict;
    hold.until = 0;
    try {
      setState(hold, 'introspection', this.userinfo.cached(hash, Date.now()) ?? (await this.userinfo.fetch(token, hash, this.cacheMs)));
      return 'allow';
    } catch (err) {
      const now = Date.now();
      if (now - this.lastErrorLogAt >= ERROR_LOG_EVERY_MS) {
        this.lastErrorLogAt = now;
        this.log.error('userinfo request failed; denying', {
          config_id: configId,
          userinfo_url: redactUrl(this.userinfo.url),
          error: err instanceof Error ? err.message.slice(0, 200) : 'unknown error',
          token: tokenRef(hash),
        });
      }
      hold.detail = 'userinfo unavailable';
      return 'unavailable';
    }
  }

  sweep(now: number): void {
    this.inner.sweep?.(now);
    this.userinfo.sweep(now);
  }

  applied(): void {
    this.inner.applied?.();
  }

  close(): void {
    this.inner.close?.();
  }
}
