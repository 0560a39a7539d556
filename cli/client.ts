// legatectl's view of a running Legate: where the components listen (from `legate run`'s state file,
// or flags) and a small client for the controller API.
import type { Envelope } from '../common/envelope.js';
import { defaultStateDir, readRunState, type RunState } from './paths.js';

export class CliError extends Error {}

export interface Target {
  controllerApi: string;
  envoyAdmin: string;
  state: RunState | undefined;
}

export function resolveTarget(flags: { controller?: string | undefined; admin?: string | undefined; stateDir?: string | undefined }): Target {
  const state = readRunState(flags.stateDir ?? defaultStateDir());
  return {
    controllerApi: flags.controller ?? process.env['LEGATE_CONTROLLER'] ?? state?.components['controller']?.endpoints['api'] ?? 'http://127.0.0.1:9095',
    envoyAdmin: flags.admin ?? process.env['LEGATE_ENVOY_ADMIN'] ?? state?.components['envoy']?.endpoints['admin'] ?? 'http://127.0.0.1:19000',
    state,
  };
}

export async function apiGet<T>(target: Target, pathAndQuery: string): Promise<T> {
  const url = `${target.controllerApi}${pathAndQuery}`;
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  } catch {
    throw new CliError(`cannot reach the Legate controller at ${target.controllerApi} (is 'legate run' running? use --controller URL)`);
  }
  let body: Envelope<T>;
  try {
    body = (await res.json()) as Envelope<T>;
  } catch {
    throw new CliError(`unexpected answer from ${url}: HTTP ${res.status}`);
  }
  if (body.status !== 'ok' || body.error) throw new CliError(body.error ?? `HTTP ${res.status}`);
  return body.data as T;
}
