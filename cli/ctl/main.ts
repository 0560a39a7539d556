// legatectl's dispatcher: the command tree, the help, and the global flags (before or after the
// command). Each command declares its flags once (cli/flags.ts, which also gives its --help) in
// cli/ctl/*commands.ts. cli/legatectl.ts runs it; tests call it in-process.
import { suggestion } from '../../controller/api/issues.js';
import { KINDS } from '../../controller/api/kinds.js';
import { command, helpText, parseFlags, UsageError, type Command, type FlagSpecs } from '../flags.js';
import { DEBUG_COMMANDS, installCommand, PROXY_COMMANDS, READ_COMMANDS, uninstallCommand } from './commands.js';
import { GLOBAL_FLAGS, out } from './context.js';
import { checkCrdsCommand, dashboardCommand } from './more-commands.js';
import { findEntry, isGroup, word, type Entry, type Group } from './tree.js';
import { addRouteCommand, CREATE_COMMANDS, deleteCommand, editCommand, removeRouteCommand } from './write-commands.js';

const completionCommand = command({
  name: 'completion',
  summary: 'a completion script for bash, zsh or fish',
  operands: 'bash|zsh|fish',
  details: 'bash: source <(legatectl completion bash); zsh: source <(legatectl completion zsh); fish: legatectl completion fish | source',
  flags: {},
  async run(_values, operands) {
    const [shell, ...extra] = operands;
    if (extra.length || !shell) throw new UsageError('completion: which shell? bash, zsh or fish');
    const scripts = await import('./completion.js');
    if (shell !== 'bash' && shell !== 'zsh' && shell !== 'fish') {
      throw new UsageError(`completion: expected bash, zsh or fish, got ${JSON.stringify(shell)}`);
    }
    out(scripts[shell](TREE));
    return 0;
  },
});

const TREE: readonly Entry[] = [
  ...READ_COMMANDS.slice(0, 2),
  { name: 'proxy', summary: 'the gateway proxy (Envoy): address, served config, dump, logs, stats', entries: PROXY_COMMANDS },
  { name: 'debug', summary: 'logs of every component, every resource as YAML', entries: DEBUG_COMMANDS },
  {
    name: 'create',
    summary: 'create a VirtualService, Upstream, Secret or AuthConfig',
    entries: [
      CREATE_COMMANDS.vs,
      {
        name: 'create upstream',
        aliases: ['us'],
        summary: 'an Upstream: static hosts or a Kubernetes Service',
        entries: CREATE_COMMANDS.upstream,
      },
      { name: 'create secret', summary: 'a Secret: tls, oauth or apikey', entries: CREATE_COMMANDS.secret },
      CREATE_COMMANDS.authconfig,
    ],
  },
  { name: 'add', summary: 'add to a resource', entries: [addRouteCommand] },
  { name: 'remove', summary: 'remove from a resource', entries: [removeRouteCommand] },
  editCommand,
  deleteCommand,
  ...READ_COMMANDS.slice(2),
  checkCrdsCommand,
  dashboardCommand,
  installCommand,
  uninstallCommand,
  completionCommand,
];

const GLOBAL_NAMES = new Set(Object.keys(GLOBAL_FLAGS));

function rows(entries: readonly Entry[]): string[] {
  const width = Math.max(...entries.map((e) => word(e).length));
  return entries.map((e) => `  ${word(e).padEnd(width)}  ${e.summary}`);
}

function globalHelp(): string {
  return helpText('legatectl', command({ name: '', summary: '', flags: GLOBAL_FLAGS, run: () => 0 }))
    .split('\n')
    .filter((l) => l.startsWith('  ') && !l.includes('--help'))
    .join('\n');
}

function usage(): string {
  const kinds = Object.values(KINDS)
    .map((k) => k.plural)
    .join(', ');
  return [
    'Usage: legatectl [global flags] <command> [flags]',
    '',
    'Commands:',
    ...rows(TREE),
    '',
    'Global flags (before or after the command):',
    globalHelp(),
    '',
    `Kinds: ${kinds}`,
    '',
    "Run 'legatectl <command> --help' for its flags.",
  ].join('\n');
}

function groupUsage(g: Group): string {
  return [
    `Usage: legatectl ${g.name} <command> [flags]`,
    '',
    g.summary,
    '',
    'Commands:',
    ...rows(g.entries),
    '',
    `Run 'legatectl ${g.name} <command> --help' for its flags.`,
  ].join('\n');
}

/** A command's help: its own flags, then the global ones. */
function commandHelp(c: Command): string {
  const own = Object.fromEntries(
    Object.entries(c.flags).filter(([name, spec]) => !GLOBAL_NAMES.has(name) || spec !== GLOBAL_FLAGS[name as keyof typeof GLOBAL_FLAGS]),
  );
  const hasGlobals = Object.keys(c.flags).some((n) => GLOBAL_NAMES.has(n));
  return helpText('legatectl', { ...c, flags: own }) + (hasGlobals ? `\nGlobal flags:\n${globalHelp()}\n` : '');
}

function unknown(what: string, typed: string, entries: readonly Entry[]): UsageError {
  const hint = suggestion(
    typed,
    entries.flatMap((e) => [word(e), ...(e.aliases ?? [])]),
  );
  const help = what === 'command' ? 'legatectl --help' : `legatectl ${what.split(' ')[0]} --help`;
  return new UsageError(`unknown ${what} ${JSON.stringify(typed)}${hint}; run '${help}'`);
}

/** Global flags typed before the command, moved after it (they are every command's flags). */
function splitLeadingGlobals(argv: readonly string[]): { globals: string[]; rest: string[] } {
  const globals: string[] = [];
  let i = 0;
  while (i < argv.length && argv[i]!.startsWith('-') && argv[i] !== '-h' && argv[i] !== '--help') {
    const arg = argv[i]!;
    const m = /^--([^=]+)(=.*)?$/.exec(arg);
    if (!m || !GLOBAL_NAMES.has(m[1]!)) {
      const hint = suggestion(
        arg.split('=')[0]!,
        [...GLOBAL_NAMES].map((n) => `--${n}`),
      );
      throw new UsageError(`${arg}: before the command go only global flags${hint}; run 'legatectl --help'`);
    }
    globals.push(arg);
    if (!m[2]) {
      const value = argv[i + 1];
      if (value === undefined) throw new UsageError(`--${m[1]} needs a value`);
      globals.push(value);
      i++;
    }
    i++;
  }
  return { globals, rest: argv.slice(i) };
}

/** Runs one legatectl command line; resolves with the exit code (errors reject: see exitCodeOf). */
export async function legatectl(argv: readonly string[]): Promise<number> {
  const { globals, rest } = splitLeadingGlobals(argv);
  const [first, ...more] = rest;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    out(usage() + '\n');
    return first === undefined ? 1 : 0;
  }
  if (first === '--version') {
    out(`${(await import('../../common/version.js')).VERSION}\n`);
    return 0;
  }
  let entry = findEntry(TREE, first);
  if (!entry) throw unknown('command', first, TREE);
  let args = more;
  while (isGroup(entry)) {
    const [sub, ...after] = args;
    if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
      out(groupUsage(entry) + '\n');
      return sub === undefined ? 1 : 0;
    }
    const next: Entry | undefined = findEntry(entry.entries, sub);
    if (!next) throw unknown(`${entry.name} command`, sub, entry.entries);
    entry = next;
    args = after;
  }
  const cmd = entry;
  const operands: string[] = [];
  const values = parseFlags<FlagSpecs>(cmd.flags, [...args, ...globals], cmd.operands ? operands : undefined);
  if (!values) {
    out(commandHelp(cmd));
    return 0;
  }
  return cmd.run(values, operands);
}

/** The exit code for a failed command: 2 for a usage mistake, else 1. */
export function exitCodeOf(err: unknown): number {
  return err instanceof UsageError ? 2 : 1;
}
