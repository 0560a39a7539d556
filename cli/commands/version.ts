// `legate version`.
import { VERSION } from '../../common/version.js';
import { command } from '../flags.js';

export const versionCommand = command({
  name: 'version',
  summary: 'print the version',
  flags: {},
  run() {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  },
});
