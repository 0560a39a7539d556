// `legate crds`: prints the CustomResourceDefinitions of every Legate kind (for kubectl apply, and
// the Helm chart), generated from the schemas the controller validates with.
import { stringify } from 'yaml';
import { customResourceDefinitions } from '../../controller/api/crds.js';
import { command } from '../flags.js';

export const crdsCommand = command({
  name: 'crds',
  summary: "print the CustomResourceDefinitions of Legate's kinds (kubectl apply -f -)",
  flags: {
    'gloo-groups': { type: 'boolean', description: "also define them under Gloo Edge's API groups, so unchanged Gloo manifests apply" },
  },
  run(flags) {
    const docs = customResourceDefinitions({ glooGroups: flags['gloo-groups'] });
    process.stdout.write(docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n'));
    return 0;
  },
});
