// Command-line options of the micro-benchmarks (`--name value`), read from process.argv.

/** The number after `--<name>`, or `dflt` when the option is absent. */
export function numberOption(name: string, dflt: number, args: readonly string[] = process.argv.slice(2)): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : dflt;
}
