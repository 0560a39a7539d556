// Ending a CLI process the way users expect on pipes: everything written reaches the reader before
// the process exits (process.exit would cut a pipe's pending output, e.g. at 64 KiB), and a reader
// that goes away (`| head`) ends the command quietly instead of with an EPIPE stack trace.

/** Exits with `code` once stdout and stderr have taken everything written. */
export function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

/** A closed stdout (the reader exited) ends the process with success, silently. */
export function endQuietlyOnClosedPipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
