// legatectl: inspect and diagnose a running Legate gateway (spec 4.5).
import fs from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { endQuietlyOnClosedPipe, exitAfterFlush } from './exit.js';
import { UsageError, booleanAssignments } from './flags.js';
import { stringify } from 'yaml';
import { VERSION } from '../common/version.js';
import { KINDS, kindFromUserInput, kindInfo } from '../controller/api/kinds.js';
import { CliError, FileBackend, pickProxy, type Backend, type ListedResource } from './ctl/backend.js';
import { EXCLUDE_NAMES, runCheck } from './ctl/check.js';
import { DEFAULT_INSTALL_NAMESPACE, defaultKubeconfig } from './ctl/kube-defaults.js';
import { errorLines } from './ctl/logs.js';
import { chooseBackend } from './ctl/select.js';
import { findStateDir, readRunState } from './paths.js';

const USAGE = `Usage: legatectl <command> [flags]

Commands:
  check [-x NAMES] [-o table|json]        health of components, resources and proxies
  get KIND [NAME] [-n NS] [-o table|yaml|json]   resources with their status
  proxy url [--port http|https] [-l]      address of the gateway proxy
  proxy served-config                     what the xDS server serves to the proxy's role
  proxy dump [--include-eds]              Envoy's /config_dump
  proxy logs [-f] [--debug=false]         Envoy's log (sets its level to debug first)
  proxy stats [-n NS] [--name NAME]       Envoy's statistics
  debug logs [-f FILE] [--errors-only]    logs of every component
  debug yaml [-f FILE]                    every resource with its status, as one YAML stream
  version [-o table|yaml|json]            client and server versions
  validate -f FILE|DIR|- [-f …] [-o text|json]   check resources as the controller would, no server (exit 1: Rejected)
  install [-n NS] [-f FILE] [--set K=V] [--dry-run]   install or upgrade Legate in a cluster (Helm chart)
  uninstall [-n NS] [--all]               remove the release (--all: also the CRDs and the namespace)

Global flags:
  --backend auto|file|kubernetes   a local 'legate run' or a cluster (default auto: a local one when found from
                                   here, else the cluster of the default kubeconfig; LEGATE_BACKEND)
  --controller URL   controller API (default: from .legate/run.json, else http://127.0.0.1:9095)
  --state-dir DIR    where 'legate run' keeps its state (default .legate)
  --kubeconfig PATH  the cluster's kubeconfig (default KUBECONFIG, else ~/.kube/config, else in-cluster)
  --kube-context NAME                the kubeconfig context (default its current context)
  --install-namespace NS, or -n on check, proxy, debug and version
                     where Legate is installed in the cluster (default LEGATE_NAMESPACE, else ${DEFAULT_INSTALL_NAMESPACE})
  --pod-selector LABEL (-p on check)  Legate's pods (default legate)

Kinds: ${Object.values(KINDS)
  .map((k) => k.plural)
  .join(', ')}`;

const GLOBAL = {
  controller: { type: 'string' },
  'state-dir': { type: 'string' },
  backend: { type: 'string' },
  kubeconfig: { type: 'string' },
  'kube-context': { type: 'string' },
  'install-namespace': { type: 'string' },
  'pod-selector': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

type GlobalValues = { [K in Exclude<keyof typeof GLOBAL, 'help'>]?: string | undefined };

type Out = (text: string) => void;
const out: Out = (t) => process.stdout.write(t);

/**
 * The backend for this command (cli/ctl/select.ts decides which). `installNamespace`: -n on the
 * commands where it names the install namespace, as glooctl's -n does (check, proxy, debug, version);
 * `alsoFileFilter`: with a local `legate run` it filters instead (proxy -n: the proxy's namespace).
 */
async function backendFrom(
  values: GlobalValues,
  installNamespace?: { flag: string; value: string | undefined; alsoFileFilter?: boolean },
): Promise<Backend> {
  const given = (names: readonly [string, string | undefined][]): string[] => names.filter(([, v]) => v).map(([n]) => n);
  const kubeFlags = given([
    ['--kubeconfig', values.kubeconfig],
    ['--kube-context', values['kube-context']],
    ['--install-namespace', values['install-namespace']],
    ['--pod-selector', values['pod-selector']],
  ]);
  const fileFlags = given([
    ['--state-dir', values['state-dir']],
    ['--controller', values.controller],
    ['LEGATE_STATE_DIR', process.env['LEGATE_STATE_DIR']],
    ['LEGATE_CONTROLLER', process.env['LEGATE_CONTROLLER']],
  ]);
  const choice = chooseBackend(
    { backend: values.backend ?? (process.env['LEGATE_BACKEND'] || undefined), kubeFlags, fileFlags },
    {
      localRun: () => {
        const found = findStateDir();
        return { found: readRunState(found.dir) !== undefined, tried: found.tried };
      },
      kubeconfig: defaultKubeconfig,
    },
  );
  if (choice.backend === 'file') {
    if (installNamespace?.value && !installNamespace.alsoFileFilter) {
      throw new UsageError(
        `${installNamespace.flag} names the install namespace in a cluster; this is a local 'legate run' (file backend)`,
      );
    }
    return FileBackend.open({ controller: values.controller, stateDir: values['state-dir'] });
  }
  // loaded only now: the Kubernetes client costs half a second of every command that does not need it
  const { KubeBackend } = await import('./ctl/kube-backend.js');
  return new KubeBackend({
    kubeconfig: values.kubeconfig,
    context: values['kube-context'],
    namespace: installNamespace?.value ?? values['install-namespace'] ?? (process.env['LEGATE_NAMESPACE'] || DEFAULT_INSTALL_NAMESPACE),
    podSelector: values['pod-selector'] ?? 'legate',
    chosenBecause: choice.because,
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'check':
      return check(rest);
    case 'get':
      return get(rest);
    case 'proxy':
      return proxy(rest);
    case 'debug':
      return debug(rest);
    case 'install':
      return (await import('./ctl/install.js')).install(rest, out);
    case 'uninstall':
      return (await import('./ctl/install.js')).uninstall(rest, out);
    case 'version':
      return version(rest);
    case 'validate':
      return validate(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(USAGE + '\n');
      return command === undefined ? 1 : 0;
    default:
      throw new CliError(`unknown command ${JSON.stringify(command)}; run 'legatectl help'`);
  }
}

// ---- validate ----

async function validate(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      output: { type: 'string', short: 'o', default: 'text' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    out(
      [
        'Usage: legatectl validate -f FILE|DIR|- [-f …] [-o text|json]',
        '',
        'Gives every resource the status the controller would give it, without a server; exits 1 when one would be',
        'Rejected (or a Warning, with Settings gateway.validation.allowWarnings: false) or a document does not load.',
        '',
      ].join('\n'),
    );
    return 0;
  }
  if (values.output !== 'text' && values.output !== 'json')
    throw new UsageError(`-o: expected text or json, got ${JSON.stringify(values.output)}`);
  const { validatePaths } = await import('./validate.js');
  return validatePaths([...(values.file ?? []), ...positionals], out, values.output);
}

// ---- version (spec 9) ----

async function serverVersion(backend: Backend): Promise<string | undefined> {
  try {
    return (await backend.api<{ version: string }>('/api/v1/version')).version;
  } catch {
    return undefined;
  }
}

/** Every command warns on stderr when the client and the server differ (spec 9). */
async function warnOnVersionSkew(backend: Backend): Promise<void> {
  const server = await serverVersion(backend);
  if (server && server !== VERSION) {
    process.stderr.write(
      `----------\nlegatectl version (${VERSION}) differs from the server components (${server}).\nConsider running the legatectl of ` +
        `release ${server}.\n----------\n`,
    );
  }
}

async function version(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...GLOBAL, namespace: { type: 'string', short: 'n' }, output: { type: 'string', short: 'o', default: 'table' } },
  });
  if (!['table', 'yaml', 'json'].includes(values.output)) {
    throw new UsageError(`-o: expected table, yaml or json, got ${JSON.stringify(values.output)}`);
  }
  const backend = await backendFrom(values, { flag: '-n', value: values.namespace });
  const server = await serverVersion(backend);
  const kubernetes = backend.mode === 'kubernetes' ? await backend.platformVersion() : undefined;
  const both = { client: VERSION, server: server ?? null, ...(backend.mode === 'kubernetes' ? { kubernetes: kubernetes ?? null } : {}) };
  if (values.output === 'json') out(JSON.stringify(both, null, 2) + '\n');
  else if (values.output === 'yaml') out(stringify(both));
  else {
    out(`Client version: ${VERSION}\n`);
    out(server ? `Server version: ${server}\n` : 'Server: version undefined, could not find any version of legate running\n');
    if (kubernetes) out(`Kubernetes version: ${kubernetes}\n`);
  }
  await warnOnVersionSkew(backend);
  return 0;
}

// ---- check ----

async function check(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      ...GLOBAL,
      exclude: { type: 'string', short: 'x', multiple: true },
      output: { type: 'string', short: 'o', default: 'table' },
      namespace: { type: 'string', short: 'n' },
      'pod-selector': { type: 'string', short: 'p' },
    },
  });
  if (values.help) {
    out(
      `Usage: legatectl check [-x NAME[,NAME]] [-o table|json] [-n INSTALL_NAMESPACE] [-p POD_LABEL]\n` +
        `Exclude names: ${EXCLUDE_NAMES.join(', ')}\n`,
    );
    return 0;
  }
  if (!['table', 'json'].includes(values.output)) throw new CliError(`-o: expected table or json, got ${JSON.stringify(values.output)}`);
  const exclude = new Set(
    (values.exclude ?? [])
      .flatMap((x) => x.split(','))
      .map((x) => x.trim())
      .filter(Boolean),
  );
  for (const x of exclude)
    if (!EXCLUDE_NAMES.includes(x)) throw new CliError(`-x: unknown check ${JSON.stringify(x)}; one of ${EXCLUDE_NAMES.join(', ')}`);
  const backend = await backendFrom(values, { flag: '-n', value: values.namespace });
  await warnOnVersionSkew(backend);
  const json = values.output === 'json';
  const report = await runCheck(backend, exclude, VERSION, (line) => {
    if (!json) out(line + '\n');
  });
  if (json) {
    out(JSON.stringify(report, null, 2) + '\n');
    return report.errors.length ? 1 : 0;
  }
  if (!report.errors.length) {
    out('No problems detected.\n');
    return 0;
  }
  out(
    `Error: ${report.errors.length} error${report.errors.length === 1 ? '' : 's'} ` +
      `occurred:\n${report.errors.map((e) => `\t* ${e}\n`).join('')}`,
  );
  return 1;
}

// ---- get ----

function details(r: ListedResource): string {
  const spec = r.spec ?? {};
  if (r.kind === 'VirtualService') {
    const vh = spec['virtualHost'] as { domains?: string[]; routes?: unknown[] } | undefined;
    return `domains=${(vh?.domains?.length ? vh.domains : ['*']).join(',')} routes=${vh?.routes?.length ?? 0}`;
  }
  if (r.kind === 'RouteTable') {
    const routes = (spec['routes'] as { delegateAction?: unknown }[] | undefined) ?? [];
    const delegating = routes.filter((x) => x.delegateAction !== undefined).length;
    return `routes=${routes.length}${delegating ? ` delegating=${delegating}` : ''} weight=${String(spec['weight'] ?? 0)}`;
  }
  if (r.kind === 'Upstream') {
    const s = spec as {
      static?: { hosts: { addr: string; port: number }[] };
      kube?: { serviceNamespace: string; serviceName: string; servicePort: number };
    };
    if (s.static) return `static ${s.static.hosts.map((h) => `${h.addr}:${h.port}`).join(',')}`;
    if (s.kube) return `kube ${s.kube.serviceNamespace}/${s.kube.serviceName}:${s.kube.servicePort}`;
  }
  if (r.kind === 'Gateway') return `bind=${String(spec['bindAddress'] ?? '::')}:${String(spec['bindPort'])}`;
  if (r.kind === 'UpstreamGroup') {
    const dests = (spec['destinations'] ?? []) as {
      destination?: { upstream?: { name: string }; kube?: { ref: { name: string } } };
      weight?: number;
    }[];
    return dests.map((d) => `${d.destination?.upstream?.name ?? d.destination?.kube?.ref.name ?? '?'}=${d.weight ?? 1}`).join(',');
  }
  if (r.kind === 'VirtualHostOption' || r.kind === 'RouteOption') return `options=${Object.keys(spec['options'] ?? {}).join(',')}`;
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
  return (
    rows
      .map((row) =>
        row
          .map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

async function get(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...GLOBAL, namespace: { type: 'string', short: 'n' }, output: { type: 'string', short: 'o', default: 'table' } },
  });
  if (values.help) {
    out('Usage: legatectl get KIND [NAME] [-n NAMESPACE] [-o table|yaml|json]\n');
    return 0;
  }
  const [kindArg, name] = positionals;
  if (!kindArg) throw new CliError('get: which kind? e.g. legatectl get virtualservices');
  const kind = kindFromUserInput(kindArg);
  if (!kind) throw new CliError(`get: unknown kind ${JSON.stringify(kindArg)}`);
  if (!['table', 'yaml', 'json'].includes(values.output))
    throw new CliError(`-o: expected table, yaml or json, got ${JSON.stringify(values.output)}`);
  const backend = await backendFrom(values);
  await warnOnVersionSkew(backend);
  const { items, unavailable } = await backend.resources({ kind, namespace: values.namespace, name });
  // the kind cannot be read at all (the controller or a CRD is missing): say why rather than list nothing
  if (unavailable.length && !items.length)
    throw new CliError(`cannot list ${kindInfo(kind).plural}: ${unavailable.map((u) => u.reason).join('; ')}`);
  for (const u of unavailable) process.stderr.write(`legatectl: not shown: ${u.kinds.join(', ')}: ${u.reason}\n`);
  if (name && !items.length) throw new CliError(`${kind} ${values.namespace ? values.namespace + '.' : ''}${name} not found`);
  items.sort((a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name));
  const shown: unknown = name && items.length === 1 ? items[0] : items;
  if (values.output === 'json') out(JSON.stringify(shown, null, 2) + '\n');
  else if (values.output === 'yaml') out(stringify(shown, { lineWidth: 0 }));
  else out(table(items));
  return 0;
}

// ---- proxy ----

const PROXY_USAGE = `Usage: legatectl proxy <url|served-config|dump|logs|stats> [flags]
  common flags: -n NAMESPACE, --name PROXY (default: the gateway proxy of 'legate run'; on a cluster,
  the install namespace and gateway-proxy)
  url: --port http|https (a port name of the Service on a cluster), -l for a node port on a node's address`;

async function proxy(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    // glooctl users type --debug=false
    args: booleanAssignments(rest, ['include-eds', 'follow', 'debug', 'help', 'local-cluster']),
    options: {
      ...GLOBAL,
      namespace: { type: 'string', short: 'n' },
      name: { type: 'string' },
      port: { type: 'string', default: 'http' },
      'include-eds': { type: 'boolean' },
      follow: { type: 'boolean', short: 'f' },
      debug: { type: 'boolean', short: 'd', default: true },
      'local-cluster': { type: 'boolean', short: 'l' },
    },
    allowNegative: true,
  });
  if (values.help || !sub) {
    out(PROXY_USAGE + '\n');
    return sub ? 0 : 1;
  }
  // on a cluster, -n is where the proxy's pods and Service are (its role is <namespace>~<name>)
  const backend = await backendFrom(values, { flag: '-n', value: values.namespace, alsoFileFilter: true });
  const selector = { namespace: values.namespace, name: values.name };
  await warnOnVersionSkew(backend);
  if (sub === 'url') {
    const { url, note } = await backend.proxyUrl(selector, values.port, values['local-cluster'] ?? false);
    if (note) process.stderr.write(`legatectl: ${note}\n`);
    out(url + '\n');
    return 0;
  }
  const p = await pickProxy(backend, selector);
  switch (sub) {
    case 'served-config': {
      const served = await backend.api<Record<string, Record<string, unknown[]>>>(`/api/v1/served?role=${encodeURIComponent(p.role)}`);
      const types = served[p.role];
      if (!types) throw new CliError(`the controller serves nothing for role ${p.role}`);
      const section = (title: string, suffix: string): string => {
        const entry = Object.entries(types).find(([t]) => t.endsWith(suffix));
        return `#${title}\n${stringify(entry?.[1] ?? [], { lineWidth: 0 })}`;
      };
      out(`#role: ${p.role}\n`);
      out(
        section('clusters', '.Cluster') +
          section('eds', '.ClusterLoadAssignment') +
          section('listeners', '.Listener') +
          section('rds', '.RouteConfiguration'),
      );
      return 0;
    }
    case 'dump':
      out(await backend.proxyAdmin(p, `/config_dump${values['include-eds'] ? '?include_eds' : ''}`));
      return 0;
    case 'stats':
      out(await backend.proxyAdmin(p, '/stats'));
      return 0;
    case 'logs': {
      if (values.debug) {
        await backend.proxyAdmin(p, '/logging?level=debug', 'POST');
        process.stderr.write(`Envoy's log level is now debug. Set it back to info when you are done:\n  ${backend.logLevelResetHint(p)}\n`);
      }
      await backend.proxyLog(p, values.follow ?? false, out);
      return 0;
    }
    default:
      throw new CliError(`unknown proxy command ${JSON.stringify(sub)}\n${PROXY_USAGE}`);
  }
}

// ---- debug ----

async function debug(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      ...GLOBAL,
      file: { type: 'string', short: 'f' },
      'errors-only': { type: 'boolean' },
      namespace: { type: 'string', short: 'n' },
    },
  });
  if (values.help || !sub) {
    out('Usage: legatectl debug logs [-f FILE] [--errors-only] | legatectl debug yaml [-f FILE]   [-n INSTALL_NAMESPACE]\n');
    return sub ? 0 : 1;
  }
  const backend = await backendFrom(values, { flag: '-n', value: values.namespace });
  let text = '';
  let failed = false;
  if (sub === 'logs') {
    for (const l of await backend.logs()) {
      try {
        const log = await l.read();
        text += `--- ${l.title} ---\n${values['errors-only'] ? errorLines(log) : log}`;
      } catch (err) {
        // one unreadable log does not hide the others; the exit code says something was missing
        if (!(err instanceof CliError)) throw err;
        process.stderr.write(`legatectl: ${err.message}\n`);
        failed = true;
      }
    }
  } else if (sub === 'yaml') {
    await warnOnVersionSkew(backend);
    const { items, unavailable } = await backend.resources();
    for (const u of unavailable) process.stderr.write(`legatectl: not included: ${u.kinds.join(', ')}: ${u.reason}\n`);
    items.sort(
      (a, b) =>
        a.kind.localeCompare(b.kind) ||
        a.metadata.namespace.localeCompare(b.metadata.namespace) ||
        a.metadata.name.localeCompare(b.metadata.name) ||
        a.apiVersion.localeCompare(b.apiVersion),
    );
    const install = await backend.installObjects();
    for (const p of install.problems) process.stderr.write(`legatectl: not included: ${p}\n`);
    text = [...install.objects, ...items].map((r) => stringify(r, { lineWidth: 0 })).join('---\n');
  } else {
    throw new CliError(`unknown debug command ${JSON.stringify(sub)}; use logs or yaml`);
  }
  if (values.file) {
    fs.writeFileSync(values.file, text);
    process.stderr.write(`wrote ${values.file}\n`);
  } else out(text);
  return failed ? 1 : 0;
}

endQuietlyOnClosedPipe();
main(process.argv.slice(2)).then(exitAfterFlush, (err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`legatectl: ${message}\n`);
  const usage =
    err instanceof UsageError ||
    (!(err instanceof CliError) && String((err as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS'));
  exitAfterFlush(usage ? 2 : 1);
});
