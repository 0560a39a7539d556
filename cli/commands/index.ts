// The `legate` commands, in the order help lists them (an explicit list; nothing registers itself).
// A command's module holds its name, flags and run(); run() imports the heavy modules it needs (the
// controller, a service) itself, so that each process loads only its own: an extension process then
// starts in ~0.4 s of CPU and ~95 MB instead of ~1.4 s and ~190 MB (the build splits those imports into
// chunks, scripts/build.mjs).
import type { Command } from '../flags.js';
import { bootstrapCommand } from './bootstrap.js';
import { consoleCommand } from './console.js';
import { controllerCommand } from './controller.js';
import { crdsCommand } from './crds.js';
import { extauthCommand, graphqlCommand } from './extensions.js';
import { observabilityCommand } from './observability.js';
import { ratelimitCommand } from './ratelimit.js';
import { runCommand } from './run.js';
import { validateCommand } from './validate.js';
import { versionCommand } from './version.js';

export const COMMANDS: readonly Command[] = [
  runCommand,
  controllerCommand,
  consoleCommand,
  graphqlCommand,
  extauthCommand,
  ratelimitCommand,
  observabilityCommand,
  bootstrapCommand,
  crdsCommand,
  validateCommand,
  versionCommand,
];

/** `legate --help`, from the commands' summaries. */
export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: legate <command> [flags]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'legate <command> --help' for its flags.",
  ].join('\n');
}
