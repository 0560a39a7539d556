// `legate`: the gateway's components, one subcommand each (cli/commands/), and `legate run` (all
// in one). This file only dispatches; each command declares its flags once (cli/flags.ts), which
// also gives its --help.
import { VERSION } from '../common/version.js';
import { COMMANDS, usage } from './commands/index.js';
import { exitAfterFlush } from './exit.js';
import { UsageError, helpText, parseFlags, type FlagSpecs } from './flags.js';

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 1 : 0;
  }
  if (name === '--version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) throw new UsageError(`unknown command ${JSON.stringify(name)}\n\n${usage()}`);
  const operands: string[] = [];
  const values = parseFlags<FlagSpecs>(cmd.flags, rest, cmd.operands ? operands : undefined);
  if (!values) {
    process.stdout.write(helpText('legate', cmd));
    return 0;
  }
  return cmd.run(values, operands);
}

main(process.argv.slice(2)).then(exitAfterFlush, (err: unknown) => {
  process.stderr.write(`legate: ${err instanceof Error ? err.message : String(err)}\n`);
  exitAfterFlush(err instanceof UsageError ? 2 : 1);
});
