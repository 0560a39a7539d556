import { DURATION_PATTERN } from '../api/primitives.js';
import type { DurationIR } from './ir.js';

const unitNanos: Record<string, number> = { ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** "15s", "1.5s", "250ms", "2m" -> {seconds, nanos}. The schema has already checked the format. */
export function parseDuration(text: string): DurationIR {
  const match = DURATION_PATTERN.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  const totalNanos = Math.round(Number(match[1]) * (unitNanos[match[3] ?? 's'] ?? 1e9));
  const seconds = Math.floor(totalNanos / 1e9);
  const nanos = totalNanos - seconds * 1e9;
  return nanos ? { seconds, nanos } : { seconds };
}
