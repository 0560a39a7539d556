// The seam between the Authorizer and one kind of auth step (introspection, JWT, …). The Authorizer
// parses the bearer token, runs a config's steps in order and denies at the first step that does not
// allow; a step only judges the token. Every failure is a denial (fail closed), never a throw.
import type { Outcome } from './outcome.js';

/** What a check carries from step to step; one per check (reused on the synchronous path). */
export interface Hold {
  /** epoch ms until which every step's allow holds (edge grant); steps lower it, 0 = do not cache */
  until: number;
  /** why the deciding step denied, for the denial log line (never token content); '' when none */
  detail: string;
  /** request headers extauth was sent besides `authorization` (lower-case names; API keys) */
  headers: Readonly<Record<string, string>>;
}

/** A step's answer about itself, for `configs()` and the `got new config` log: no secrets. */
export type StepSummary = Record<string, unknown> & { type: string };

export interface AuthStep {
  readonly summary: StepSummary;
  /** whether the step judges the bearer token (false: it reads Hold.headers; token and hash are '') */
  readonly bearer: boolean;
  /**
   * The outcome without any I/O, when the step can give one (a cached introspection, a syntactically
   * hopeless JWT); undefined when it must call out, and then the Authorizer awaits decide().
   */
  decideNow(token: string, hash: string, now: number, hold: Hold): Outcome | undefined;
  /** The outcome, calling out as needed. Never rejects; logs its own call failures (rate-limited). */
  decide(token: string, hash: string, hold: Hold, configId: string): Promise<Outcome>;
}
