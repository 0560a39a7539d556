// `legate validate DIR|FILE…`: the webhook's check on files, for CI pipelines: no server, exit code 0 or 1.
import { command } from '../flags.js';

export const validateCommand = command({
  name: 'validate',
  summary: 'check resource files as the controller would, without a server: exit 1 if one would be Rejected',
  operands: 'DIR|FILE|-…',
  details:
    'Every resource gets the status the controller would give it; the files pass when none would be Rejected (nor a\n' +
    'Warning, with Settings gateway.validation.allowWarnings: false) and every document loads.',
  flags: {
    output: { type: 'choice', short: 'o', choices: ['text', 'json'], default: 'text', description: 'the verdict as lines or as JSON' },
  },
  async run(flags, operands) {
    const { validatePaths } = await import('../validate.js');
    return validatePaths(operands, (t) => process.stdout.write(t), flags.output === 'json' ? 'json' : 'text');
  },
});
