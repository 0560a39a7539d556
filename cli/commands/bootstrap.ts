// `legate bootstrap`: prints an Envoy bootstrap that points a proxy role at the controller.
import { renderBootstrap } from '../../controller/bootstrap/bootstrap.js';
import { UsageError, command } from '../flags.js';
import { DEFAULTS } from './common.js';

export const bootstrapCommand = command({
  name: 'bootstrap',
  summary: 'print an Envoy bootstrap pointing at the controller',
  flags: {
    role: {
      type: 'string',
      default: DEFAULTS.role,
      placeholder: 'NS~NAME',
      description: "the proxy role (node.metadata.role): '<write namespace>~<proxy>'",
    },
    'node-id': { type: 'string', placeholder: 'ID', description: 'node.id (default <proxy>~<namespace>)' },
    'xds-host': { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: "the controller's xDS host" },
    'xds-port': { type: 'port', default: DEFAULTS.xdsPort, description: "the controller's xDS port" },
    'admin-host': { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: "address of Envoy's admin interface" },
    'admin-port': { type: 'port', default: DEFAULTS.adminPort, description: "port of Envoy's admin interface" },
    'stats-listener-port': {
      type: 'int',
      default: 0,
      min: 0,
      max: 65535,
      description: "a listener serving Envoy's Prometheus metrics on GET /metrics (Gloo's chart uses 8081); 0: none",
    },
  },
  run(flags) {
    if (!/^[^~]+~[^~]+$/.test(flags.role)) throw new UsageError(`--role: expected NAMESPACE~NAME, got ${JSON.stringify(flags.role)}`);
    const text = renderBootstrap({
      role: flags.role,
      ...(flags['node-id'] ? { nodeId: flags['node-id'] } : {}),
      xdsHost: flags['xds-host'],
      xdsPort: flags['xds-port'],
      adminHost: flags['admin-host'],
      adminPort: flags['admin-port'],
      ...(flags['stats-listener-port'] ? { statsPort: flags['stats-listener-port'] } : {}),
    });
    process.stdout.write(text);
    return 0;
  },
});
