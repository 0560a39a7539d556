// Reading component logs: whole files, errors only, or following new lines.
import fs from 'node:fs';

/** An error line: a JSON log line with level error, or an Envoy line tagged [error]/[critical]. */
export function isErrorLine(line: string): boolean {
  if (line.startsWith('{')) {
    try {
      const level = (JSON.parse(line) as { level?: unknown }).level;
      return level === 'error' || level === 'fatal';
    } catch {
      return false;
    }
  }
  return /\]\[(error|critical)\]|\[(error|critical)\]/.test(line);
}

/** The line `legate run` writes into each component's log when it starts it: this run's part begins after it. */
export function runStartLine(pid: number): string {
  return JSON.stringify({ time: new Date().toISOString(), level: 'info', msg: RUN_START, pid }) + '\n';
}

const RUN_START = 'legate run started: the log of this run begins here';

/** A resource the controller rejected (logged at warn: the gateway itself is fine), as the user needs to see. */
function isRejection(line: string): boolean {
  if (!line.startsWith('{')) return false;
  try {
    return (JSON.parse(line) as { msg?: unknown }).msg === 'resource rejected';
  } catch {
    return false;
  }
}

/** The error lines and rejections of the current run's part of a log (see isErrorLine), each ending in a newline. */
export function errorLines(text: string): string {
  const lines = text.split('\n');
  const start = lines.findLastIndex((l) => l.includes(RUN_START));
  return lines
    .slice(start + 1)
    .filter((l) => l && (isErrorLine(l) || isRejection(l)))
    .map((l) => l + '\n')
    .join('');
}

export function readLog(path: string, errorsOnly: boolean): string {
  const text = fs.readFileSync(path, 'utf8');
  return errorsOnly ? errorLines(text) : text;
}

/** Prints new lines appended to `path` until the process is stopped. */
export function follow(path: string, from: number, write: (text: string) => void): Promise<never> {
  let position = from;
  return new Promise(() => {
    const poll = (): void => {
      let size: number;
      try {
        size = fs.statSync(path).size;
      } catch {
        return;
      }
      if (size < position) position = 0; // truncated or rotated
      if (size === position) return;
      const fd = fs.openSync(path, 'r');
      try {
        const buffer = Buffer.alloc(size - position);
        fs.readSync(fd, buffer, 0, buffer.length, position);
        position = size;
        write(buffer.toString('utf8'));
      } finally {
        fs.closeSync(fd);
      }
    };
    setInterval(poll, 200);
  });
}
