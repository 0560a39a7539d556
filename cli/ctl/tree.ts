// legatectl's commands as a tree: groups (proxy, debug, create, add, remove) hold commands; a command's
// name is its whole path (`proxy dump`), its last word what one types. Shared by the dispatcher
// (cli/legatectl.ts), the help and the shell completion.
import type { Command } from '../flags.js';

export interface Group {
  name: string;
  summary: string;
  aliases?: readonly string[];
  entries: readonly Entry[];
}
export type Entry = Command | Group;

export const isGroup = (e: Entry): e is Group => 'entries' in e;

/** The word one types for an entry (the last word of its path). */
export const word = (e: Entry): string => e.name.split(' ').at(-1)!;

export function findEntry(entries: readonly Entry[], typed: string): Entry | undefined {
  return entries.find((e) => word(e) === typed || e.aliases?.includes(typed));
}

/** Every command under the entries, with its path. */
export function leaves(entries: readonly Entry[]): Command[] {
  return entries.flatMap((e) => (isGroup(e) ? leaves(e.entries) : [e]));
}

/** Every group under the entries, the entries themselves included. */
export function groups(entries: readonly Entry[]): Group[] {
  return entries.flatMap((e) => (isGroup(e) ? [e, ...groups(e.entries)] : []));
}
