// The error every legatectl command ends with when something is wrong: one line on stderr, exit 1.
export class CliError extends Error {}
