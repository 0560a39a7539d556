// JSON-lines logger shared by every Legate component: {level, time, msg, component, ...fields}.
// The level starts from LOG_LEVEL (default info) and can be changed at runtime (admin /logging).

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly component: string;
  level: LogLevel;
  enabled(level: LogLevel): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(component: string): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
}

export function createLogger(component: string, options: LoggerOptions = {}): Logger {
  const envLevel = process.env['LOG_LEVEL'];
  const state = { level: options.level ?? (isLogLevel(envLevel) ? envLevel : 'info') };
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));
  return loggerWithState(component, state, write);
}

// Children share the parent's level, so one PUT /logging changes a whole component.
function loggerWithState(component: string, state: { level: LogLevel }, write: (line: string) => void): Logger {
  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (rank[level] < rank[state.level]) return;
    const record: LogFields = { level, time: new Date().toISOString(), msg, component, ...fields };
    write(JSON.stringify(record, errorReplacer));
  };
  const logger: Logger = {
    component,
    get level() {
      return state.level;
    },
    set level(value: LogLevel) {
      state.level = value;
    },
    enabled: (level) => rank[level] >= rank[state.level],
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (sub) => loggerWithState(`${component}.${sub}`, state, write),
  };
  return logger;
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
