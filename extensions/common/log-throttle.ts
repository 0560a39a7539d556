// Log lines a client can cause once per request, message or frame (an unparsable message, a failed stream) are
// rate-limited: one line per message text per interval, the next one carrying how many were suppressed since.
// A client sending garbage in a loop then costs a line every few seconds, not one per message.
import type { LogFields, LogLevel, Logger } from '../../common/log.js';

/** one line per message text per this interval */
export const LOG_THROTTLE_MS = 10_000;

/** A logger whose warn and error lines are rate-limited per message text (debug and info pass through). */
export function throttledLogger(logger: Logger, intervalMs = LOG_THROTTLE_MS, now: () => number = Date.now): Logger {
  const last = new Map<string, { at: number; suppressed: number }>();
  const limited =
    (level: LogLevel) =>
    (msg: string, fields?: LogFields): void => {
      if (!logger.enabled(level)) return;
      const t = now();
      const seen = last.get(msg);
      if (seen && t - seen.at < intervalMs) {
        seen.suppressed++;
        return;
      }
      const suppressed = seen?.suppressed ?? 0;
      last.set(msg, { at: t, suppressed: 0 });
      logger[level === 'warn' ? 'warn' : 'error'](msg, suppressed ? { ...fields, suppressed } : fields);
    };
  return {
    component: logger.component,
    get level() {
      return logger.level;
    },
    set level(value: LogLevel) {
      logger.level = value;
    },
    enabled: (level) => logger.enabled(level),
    debug: (msg, fields) => logger.debug(msg, fields),
    info: (msg, fields) => logger.info(msg, fields),
    warn: limited('warn'),
    error: limited('error'),
    child: (sub) => throttledLogger(logger.child(sub), intervalMs, now),
  };
}
