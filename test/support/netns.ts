// A test host behind a non-loopback address: a network namespace joined to this one by a veth pair,
// addresses from 198.18.0.0/15 (the benchmarking range, RFC 2544), so nothing outside the machine
// is ever a target. For backends the API server refuses on loopback (EndpointSlice addresses).
// remove() deletes the namespace and the link.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { stopProcess } from './util.js';

export interface TestHost {
  /** the namespace's address, e.g. 198.18.7.2 */
  address: string;
  /** this side's end of the pair, e.g. 198.18.7.1: a non-loopback local address to bind test servers to */
  hostAddress: string;
  /** Runs a command inside the namespace (stopped by remove()). */
  spawn(command: string, args: string[]): ChildProcess;
  remove(): Promise<void>;
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export function createTestHost(): TestHost {
  const id = randomBytes(3).toString('hex');
  const ns = `legate-${id}`;
  const hostSide = `lg${id}h`;
  const nsSide = `lg${id}n`;
  const third = randomBytes(1)[0]! % 250;
  const fourth = (randomBytes(1)[0]! % 60) * 4;
  const hostAddress = `198.18.${third}.${fourth + 1}`;
  const address = `198.18.${third}.${fourth + 2}`;
  const children: ChildProcess[] = [];
  ip('netns', 'add', ns);
  try {
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', nsSide);
    ip('link', 'set', nsSide, 'netns', ns);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${address}/30`, 'dev', nsSide);
    ip('netns', 'exec', ns, 'ip', 'link', 'set', nsSide, 'up');
    ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
  } catch (err) {
    try {
      ip('netns', 'del', ns);
    } catch {
      // nothing to clean
    }
    throw err;
  }
  return {
    address,
    hostAddress,
    spawn(command, args) {
      const child = spawn('ip', ['netns', 'exec', ns, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      return child;
    },
    async remove() {
      for (const c of children) await stopProcess(c);
      for (const args of [
        ['link', 'del', hostSide],
        ['netns', 'del', ns],
      ]) {
        try {
          ip(...args);
        } catch {
          // already gone (deleting the namespace removes its end of the pair)
        }
      }
    },
  };
}
