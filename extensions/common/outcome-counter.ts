// A Prometheus counter by outcome for a service's per-call path: counted in a plain map and added to the
// prom-client counter when it is read, because prom-client hashes the labels on every inc.
import { Counter, type Registry } from 'prom-client';

/** Registers `name` (label `outcome`); the returned function counts one call of `outcome`. */
export function outcomeCounter<O extends string>(registry: Registry, name: string, help: string): (outcome: O) => void {
  const counted = new Map<O, number>();
  new Counter({
    name,
    help,
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const [outcome, n] of counted) this.inc({ outcome }, n);
      counted.clear();
    },
  });
  return (outcome) => void counted.set(outcome, (counted.get(outcome) ?? 0) + 1);
}
