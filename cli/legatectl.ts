// legatectl: inspect, diagnose and change a running Legate gateway (spec 4.5), as glooctl does for Gloo.
// The commands and their dispatch are in cli/ctl/main.ts.
import { exitCodeOf, legatectl } from './ctl/main.js';
import { endQuietlyOnClosedPipe, exitAfterFlush } from './exit.js';

endQuietlyOnClosedPipe();
legatectl(process.argv.slice(2)).then(exitAfterFlush, (err: unknown) => {
  process.stderr.write(`legatectl: ${err instanceof Error ? err.message : String(err)}\n`);
  exitAfterFlush(exitCodeOf(err));
});
