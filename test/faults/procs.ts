// The processes of a `legate run`: pids (run.json has each component's first pid; after a restart
// the supervisor's new child is found through /proc), memory, Envoy's config versions and stats.
import fs from 'node:fs';
import path from 'node:path';
import type { Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';

export interface RunState {
  pid: number;
  components: Record<string, { pid: number; endpoints: Record<string, string> }>;
}

export function runState(gw: Gateway): RunState {
  return JSON.parse(fs.readFileSync(path.join(gw.stateDir, 'run.json'), 'utf8')) as RunState;
}

/** The live child of `legate run` running `legate <component>` (the supervisor's current one). */
export function componentPid(gw: Gateway, component: 'controller' | 'graphql' | 'extauth' | 'envoy'): number | undefined {
  const parent = runState(gw).pid;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== parent || fields[0] === 'Z') continue;
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const match = component === 'envoy' ? argv.some((a) => a.endsWith('envoy-bootstrap.yaml')) : argv.includes(component);
      if (match) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

export function waitForComponent(gw: Gateway, component: 'controller' | 'graphql' | 'extauth', not?: number, timeoutMs = 20_000) {
  return eventually(
    `a ${component} process`,
    () => {
      const pid = componentPid(gw, component);
      return pid !== undefined && pid !== not ? pid : undefined;
    },
    timeoutMs,
  );
}

/** Resident memory in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Math.round(Number(kb) / 102.4) / 10 : NaN;
}

/** version_info per dynamic resource (and per type) in Envoy's config dump: `<type>/<name>` -> version. */
export async function envoyVersions(gw: Gateway): Promise<Record<string, string>> {
  const res = await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump`);
  const dump = (await res.json()) as { configs: Record<string, unknown>[] };
  const out: Record<string, string> = {};
  for (const c of dump.configs) {
    const type = String(c['@type']).split('.').pop()!;
    if (typeof c['version_info'] === 'string') out[`${type}/*`] = c['version_info'];
    for (const [field, value] of Object.entries(c)) {
      if (!field.startsWith('dynamic_') || !Array.isArray(value)) continue;
      for (const item of value as Record<string, unknown>[]) {
        const inner = (item['cluster'] ?? item['route_config'] ?? item['active_state'] ?? item) as Record<string, unknown>;
        const named = (inner['listener'] ?? inner['cluster'] ?? inner) as Record<string, unknown>;
        const name = String(named['name'] ?? item['name'] ?? '?');
        const version = item['version_info'] ?? (item['active_state'] as Record<string, unknown> | undefined)?.['version_info'];
        if (typeof version === 'string') out[`${type}/${field}/${name}`] = version;
      }
    }
  }
  return out;
}

/** Envoy counters and gauges whose names match. */
export async function envoyStats(gw: Gateway, filter: RegExp): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^([^:]+): (\d+)$/.exec(line);
    if (m && filter.test(m[1]!)) out[m[1]!] = Number(m[2]);
  }
  return out;
}
