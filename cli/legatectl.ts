// legatectl: inspect a running Legate gateway.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { VERSION } from '../common/version.js';
import { KINDS, kindFromUserInput } from '../controller/api/meta.js';
import { CliError, apiGet, resolveTarget, type Target } from './client.js';

const USAGE = `Usage: legatectl <command> [flags]

Commands:
  get KIND [NAME] [-n NAMESPACE] [-o table|yaml|json]   list resources with their status
  version                                                client and server versions

Global flags:
  --controller URL   controller API (default: from .legate/run.json, else http://127.0.0.1:9095)
  --state-dir DIR    where 'legate run' keeps its state (default .legate)

Kinds: ${Object.values(KINDS)
  .map((k) => k.plural)
  .join(', ')}`;

interface ListedResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec?: Record<string, unknown>;
  status: { statuses: Record<string, { state: string; reason?: string }> };
}

const GLOBAL = {
  controller: { type: 'string' },
  'state-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'get':
      return get(rest);
    case 'version':
      return version(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return command === undefined ? 1 : 0;
    default:
      throw new CliError(`unknown command ${JSON.stringify(command)}; run 'legatectl help'`);
  }
}

function targetFrom(values: { controller?: string | undefined; 'state-dir'?: string | undefined }): Target {
  return resolveTarget({ controller: values.controller, stateDir: values['state-dir'] });
}

async function get(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...GLOBAL, namespace: { type: 'string', short: 'n' }, output: { type: 'string', short: 'o', default: 'table' } },
  });
  if (values.help) {
    process.stdout.write('Usage: legatectl get KIND [NAME] [-n NAMESPACE] [-o table|yaml|json]\n');
    return 0;
  }
  const [kindArg, name] = positionals;
  if (!kindArg) throw new CliError('get: which kind? e.g. legatectl get virtualservices');
  const kind = kindFromUserInput(kindArg);
  if (!kind) throw new CliError(`get: unknown kind ${JSON.stringify(kindArg)}`);
  if (!['table', 'yaml', 'json'].includes(values.output)) throw new CliError(`-o: expected table, yaml or json, got ${JSON.stringify(values.output)}`);
  const q = new URLSearchParams({ kind });
  if (values.namespace) q.set('namespace', values.namespace);
  if (name) q.set('name', name);
  const target = targetFrom(values);
  await warnOnVersionSkew(target);
  const items = await apiGet<ListedResource[]>(target, `/api/v1/resources?${q}`);
  items.sort((a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name));
  const shown: unknown = name && items.length === 1 ? items[0] : items;
  if (values.output === 'json') process.stdout.write(JSON.stringify(shown, null, 2) + '\n');
  else if (values.output === 'yaml') process.stdout.write(stringify(shown, { lineWidth: 0 }));
  else process.stdout.write(table(items));
  return 0;
}

function details(r: ListedResource): string {
  const spec = r.spec ?? {};
  if (r.kind === 'VirtualService') {
    const vh = spec['virtualHost'] as { domains?: string[]; routes?: unknown[] } | undefined;
    return `domains=${(vh?.domains?.length ? vh.domains : ['*']).join(',')} routes=${vh?.routes?.length ?? 0}`;
  }
  if (r.kind === 'Upstream') {
    const s = spec as { static?: { hosts: { addr: string; port: number }[] }; kube?: { serviceNamespace: string; serviceName: string; servicePort: number } };
    if (s.static) return `static ${s.static.hosts.map((h) => `${h.addr}:${h.port}`).join(',')}`;
    if (s.kube) return `kube ${s.kube.serviceNamespace}/${s.kube.serviceName}:${s.kube.servicePort}`;
  }
  if (r.kind === 'Gateway') return `bind=${String(spec['bindAddress'] ?? '::')}:${String(spec['bindPort'])}`;
  return '';
}

function table(items: ListedResource[]): string {
  if (!items.length) return 'No resources found.\n';
  const rows = [['NAMESPACE', 'NAME', 'STATUS', 'DETAILS', 'REASON']];
  for (const r of items) {
    const st = Object.values(r.status.statuses)[0];
    rows.push([r.metadata.namespace, r.metadata.name, st?.state ?? 'Pending', details(r), st?.reason ?? '']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd()).join('\n') + '\n';
}

async function serverVersion(target: Target): Promise<string | undefined> {
  try {
    return (await apiGet<{ version: string }>(target, '/api/v1/version')).version;
  } catch {
    return undefined;
  }
}

/** Spec 9: the tool must match the service; every command warns on stderr when it does not. */
async function warnOnVersionSkew(target: Target): Promise<void> {
  const server = await serverVersion(target);
  if (server && server !== VERSION) {
    process.stderr.write(
      `----------\nlegatectl version (${VERSION}) differs from the server components (${server}).\nConsider running the legatectl of release ${server}.\n----------\n`,
    );
  }
}

async function version(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { ...GLOBAL, output: { type: 'string', short: 'o' } } });
  const target = targetFrom(values);
  const server = await serverVersion(target);
  if (values.output === 'json') {
    process.stdout.write(JSON.stringify({ client: VERSION, server: server ?? null }, null, 2) + '\n');
  } else {
    process.stdout.write(`Client version: ${VERSION}\n`);
    process.stdout.write(server ? `Server version: ${server}\n` : 'Server: version undefined, could not find any version of legate running\n');
  }
  if (server && server !== VERSION) await warnOnVersionSkew(target);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`legatectl: ${message}\n`);
    const usage = !(err instanceof CliError) && String((err as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS');
    process.exit(usage ? 2 : 1);
  },
);
