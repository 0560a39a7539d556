// Helpers of the rate-limit e2e suites: bursts of requests, and timing them inside one MINUTE window.
import type { Gateway, GatewayResponse } from './gateway.js';
import { sleep } from './util.js';

/** Waits, when more than `latestMs` of the current minute are gone, so that a burst of a few seconds stays inside one MINUTE window. */
export async function freshMinute(latestMs = 40_000): Promise<void> {
  const into = Date.now() % 60_000;
  if (into > latestMs) await sleep(60_000 - into + 200);
}

/** `n` requests to `path`, one after the other. */
export async function burst(gw: Gateway, path: string, n: number, headers?: Record<string, string>): Promise<GatewayResponse[]> {
  const out: GatewayResponse[] = [];
  for (let i = 0; i < n; i++) out.push(await gw.request(path, headers ? { headers } : {}));
  return out;
}

/** The statuses of `burst`. */
export async function burstStatuses(gw: Gateway, path: string, n: number, headers?: Record<string, string>): Promise<number[]> {
  return (await burst(gw, path, n, headers)).map((r) => r.status);
}
