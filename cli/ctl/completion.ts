// `legatectl completion bash|zsh|fish`: completion scripts made from the command tree (commands, their
// flags, and kinds after get, edit and delete).
import { kindInfo, KIND_NAMES } from '../../controller/api/kinds.js';
import { groups, leaves, word, type Entry } from './tree.js';

const KIND_WORDS = KIND_NAMES.map((k) => kindInfo(k).plural);
const TAKES_KIND = new Set(['get', 'edit', 'delete']);

function flagsOf(c: { flags: Record<string, { short?: string }> }): string[] {
  return ['--help', ...Object.keys(c.flags).map((f) => `--${f}`)];
}

/** Each path (` proxy`, ` proxy dump`) and the words that may follow it. */
function table(top: readonly Entry[]): [string, string[]][] {
  const rows: [string, string[]][] = [['', [...top.map(word), '--help']]];
  for (const g of groups(top)) rows.push([` ${g.name}`, [...g.entries.map(word), '--help']]);
  for (const c of leaves(top)) rows.push([` ${c.name}`, [...flagsOf(c), ...(TAKES_KIND.has(c.name) ? KIND_WORDS : [])]]);
  return rows;
}

export function bash(top: readonly Entry[]): string {
  const rows = table(top);
  const paths = rows.map(([p]) => p).filter(Boolean);
  return `# legatectl completion for bash: source <(legatectl completion bash)
_legatectl() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" w i opts=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    case "$path $w" in
      ${paths.map((p) => JSON.stringify(p)).join('|')}) path="$path $w" ;;
    esac
  done
  case "$path" in
${rows.map(([p, words]) => `    ${JSON.stringify(p)}) opts=${JSON.stringify(words.join(' '))} ;;`).join('\n')}
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _legatectl legatectl
`;
}

export function zsh(top: readonly Entry[]): string {
  return `#compdef legatectl
# legatectl completion for zsh: source <(legatectl completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bash(top)}`;
}

export function fish(top: readonly Entry[]): string {
  const lines = ['# legatectl completion for fish: legatectl completion fish | source', 'complete -c legatectl -f'];
  const top1 = top.map(word);
  lines.push(`complete -c legatectl -n "not __fish_seen_subcommand_from ${top1.join(' ')}" -a "${top1.join(' ')}"`);
  for (const g of groups(top)) {
    lines.push(`complete -c legatectl -n "__fish_seen_subcommand_from ${word(g)}" -a "${g.entries.map(word).join(' ')}"`);
  }
  for (const c of leaves(top)) {
    const cond = `__fish_seen_subcommand_from ${word(c)}`;
    for (const [name, spec] of Object.entries(c.flags)) {
      lines.push(
        `complete -c legatectl -n "${cond}" -l ${name}${spec.short ? ` -s ${spec.short}` : ''} -d ${JSON.stringify(spec.description)}`,
      );
    }
    if (TAKES_KIND.has(c.name)) lines.push(`complete -c legatectl -n "${cond}" -a "${KIND_WORDS.join(' ')}"`);
  }
  return lines.join('\n') + '\n';
}
