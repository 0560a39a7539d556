// legatectl's reading commands (check, get, proxy …, debug …, version, validate) and install/uninstall:
// each declares its flags once (cli/flags.ts) beside the global ones; run() does the work.
import fs from 'node:fs';
import { stringify } from 'yaml';
import { VERSION } from '../../common/version.js';
import { kindFromUserInput, kindInfo, KIND_NAMES } from '../../controller/api/kinds.js';
import { suggestion } from '../../controller/api/issues.js';
import { command, UsageError, type Command } from '../flags.js';
import { CliError, pickProxy } from './backend.js';
import { EXCLUDE_NAMES, runCheck } from './check.js';
import { backendFrom, GLOBAL_FLAGS, out, serverVersion, warnOnVersionSkew } from './context.js';
import { applyable, details } from './details.js';
import { errorLines } from './logs.js';

const G = GLOBAL_FLAGS;

/** The kind a user typed, or a UsageError with the nearest kind. */
export function kindArg(input: string | undefined, verb: string): ReturnType<typeof kindFromUserInput> & string {
  if (!input) throw new UsageError(`${verb}: which kind? e.g. legatectl ${verb} virtualservices`);
  const kind = kindFromUserInput(input);
  if (kind) return kind;
  const known = KIND_NAMES.flatMap((k) => [kindInfo(k).plural, ...kindInfo(k).shortNames]);
  throw new UsageError(
    `${verb}: unknown kind ${JSON.stringify(input)}${suggestion(input.toLowerCase(), known) || `; one of ${known.join(', ')}`}`,
  );
}

export const checkCommand = command({
  name: 'check',
  summary: 'health of components, resources and proxies',
  details: `Exclude names (-x): ${EXCLUDE_NAMES.join(', ')}`,
  flags: {
    ...G,
    exclude: { type: 'strings', short: 'x', placeholder: 'NAME[,NAME]', description: 'checks to skip' },
    output: { type: 'choice', short: 'o', choices: ['table', 'json'], default: 'table', description: 'output format' },
    namespace: { type: 'string', short: 'n', placeholder: 'NS', description: 'the install namespace (cluster)' },
    'pod-selector': { type: 'string', short: 'p', placeholder: 'LABEL', description: "Legate's pods (cluster; default legate)" },
  },
  async run(values) {
    const exclude = new Set(
      values.exclude
        .flatMap((x) => x.split(','))
        .map((x) => x.trim())
        .filter(Boolean),
    );
    for (const x of exclude)
      if (!EXCLUDE_NAMES.includes(x))
        throw new UsageError(
          `-x: unknown check ${JSON.stringify(x)}${suggestion(x, EXCLUDE_NAMES) || `; one of ${EXCLUDE_NAMES.join(', ')}`}`,
        );
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
  },
});

function table(items: import('./backend.js').ListedResource[], wide: boolean): string {
  if (!items.length) return 'No resources found.\n';
  const rows = [['NAMESPACE', 'NAME', 'STATUS', 'DETAILS', 'REASON']];
  if (wide) rows[0]!.splice(2, 0, 'APIVERSION');
  for (const r of items) {
    const st = Object.values(r.status.statuses)[0];
    const row = [r.metadata.namespace, r.metadata.name, st?.state ?? 'Pending', details(r, wide), st?.reason ?? ''];
    if (wide) row.splice(2, 0, r.apiVersion);
    rows.push(row);
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

export const GET_OUTPUTS = ['table', 'wide', 'yaml', 'json', 'kube-yaml'] as const;

export const getCommand = command({
  name: 'get',
  summary: 'resources with their status',
  operands: 'KIND [NAME]',
  details: 'Every namespace unless -n. -o kube-yaml prints what one applies (no status, no server-set metadata).',
  flags: {
    ...G,
    namespace: { type: 'string', short: 'n', placeholder: 'NS', description: 'only this namespace' },
    'all-namespaces': { type: 'boolean', short: 'A', description: 'every namespace (the default; not with -n)' },
    output: { type: 'choice', short: 'o', choices: GET_OUTPUTS, default: 'table', description: 'output format' },
  },
  async run(values, operands) {
    const [kindText, name, ...extra] = operands;
    if (extra.length) throw new UsageError(`get: unexpected ${JSON.stringify(extra[0])}; usage: legatectl get KIND [NAME]`);
    const kind = kindArg(kindText, 'get');
    if (values['all-namespaces'] && values.namespace) throw new UsageError('-A and -n do not go together');
    const backend = await backendFrom(values);
    // both at once: one round trip to the controller fewer
    const [, { items, unavailable }] = await Promise.all([
      warnOnVersionSkew(backend),
      backend.resources({ kind, namespace: values.namespace, name }),
    ]);
    // the kind cannot be read at all (the controller or a CRD is missing): say why rather than list nothing
    if (unavailable.length && !items.length)
      throw new CliError(`cannot list ${kindInfo(kind).plural}: ${unavailable.map((u) => u.reason).join('; ')}`);
    for (const u of unavailable) process.stderr.write(`legatectl: not shown: ${u.kinds.join(', ')}: ${u.reason}\n`);
    if (name && !items.length) throw new CliError(`${kind} ${values.namespace ? values.namespace + '.' : ''}${name} not found`);
    items.sort((a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name));
    const one = name && items.length === 1;
    if (values.output === 'kube-yaml') {
      out(items.map((r) => stringify(applyable(r), { lineWidth: 0 })).join('---\n'));
      return 0;
    }
    const shown: unknown = one ? items[0] : items;
    if (values.output === 'json') out(JSON.stringify(shown, null, 2) + '\n');
    else if (values.output === 'yaml') out(stringify(shown, { lineWidth: 0 }));
    else out(table(items, values.output === 'wide'));
    return 0;
  },
});

// ---- proxy ----

const PROXY_SELECT = {
  namespace: {
    type: 'string',
    short: 'n',
    placeholder: 'NS',
    description: "the proxy's namespace (on a cluster, where its pods and Service are; default the install namespace)",
  },
  name: {
    type: 'string',
    placeholder: 'PROXY',
    description: "the proxy (default the gateway proxy of 'legate run'; on a cluster gateway-proxy)",
  },
} as const;

async function proxyBackend(values: import('./context.js').GlobalValues & { namespace: string | undefined }) {
  // on a cluster, -n is where the proxy's pods and Service are (its role is <namespace>~<name>)
  const backend = await backendFrom(values, { flag: '-n', value: values.namespace, alsoFileFilter: true });
  await warnOnVersionSkew(backend);
  return backend;
}

export const proxyUrlCommand = command({
  name: 'proxy url',
  summary: 'address of the gateway proxy',
  flags: {
    ...G,
    ...PROXY_SELECT,
    port: {
      type: 'string',
      default: 'http',
      placeholder: 'http|https',
      description: 'the listener (a port name of the Service on a cluster)',
    },
    'local-cluster': { type: 'boolean', short: 'l', description: "a node port on a node's address (cluster)" },
  },
  async run(values) {
    const backend = await proxyBackend(values);
    const { url, note } = await backend.proxyUrl({ namespace: values.namespace, name: values.name }, values.port, values['local-cluster']);
    if (note) process.stderr.write(`legatectl: ${note}\n`);
    out(url + '\n');
    return 0;
  },
});

export const proxyServedConfigCommand = command({
  name: 'proxy served-config',
  summary: "what the xDS server serves to the proxy's role",
  flags: { ...G, ...PROXY_SELECT },
  async run(values) {
    const backend = await proxyBackend(values);
    const p = await pickProxy(backend, { namespace: values.namespace, name: values.name });
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
  },
});

export const proxyDumpCommand = command({
  name: 'proxy dump',
  summary: "Envoy's /config_dump",
  flags: { ...G, ...PROXY_SELECT, 'include-eds': { type: 'boolean', description: 'also the endpoints' } },
  async run(values) {
    const backend = await proxyBackend(values);
    const p = await pickProxy(backend, { namespace: values.namespace, name: values.name });
    out(await backend.proxyAdmin(p, `/config_dump${values['include-eds'] ? '?include_eds' : ''}`));
    return 0;
  },
});

export const proxyStatsCommand = command({
  name: 'proxy stats',
  summary: "Envoy's statistics",
  flags: { ...G, ...PROXY_SELECT },
  async run(values) {
    const backend = await proxyBackend(values);
    const p = await pickProxy(backend, { namespace: values.namespace, name: values.name });
    out(await backend.proxyAdmin(p, '/stats'));
    return 0;
  },
});

export const proxyLogsCommand = command({
  name: 'proxy logs',
  summary: "Envoy's log (sets its level to debug first)",
  flags: {
    ...G,
    ...PROXY_SELECT,
    follow: { type: 'boolean', short: 'f', description: 'keep printing what it logs next' },
    debug: { type: 'boolean', short: 'd', default: true, description: 'set the level to debug first (--debug=false: leave it)' },
  },
  async run(values) {
    const backend = await proxyBackend(values);
    const p = await pickProxy(backend, { namespace: values.namespace, name: values.name });
    if (values.debug) {
      await backend.proxyAdmin(p, '/logging?level=debug', 'POST');
      process.stderr.write(`Envoy's log level is now debug. Set it back to info when you are done:\n  ${backend.logLevelResetHint(p)}\n`);
    }
    await backend.proxyLog(p, values.follow, out);
    return 0;
  },
});

// ---- debug ----

const INSTALL_NS = { type: 'string', short: 'n', placeholder: 'NS', description: 'the install namespace (cluster)' } as const;

function writeOut(file: string | undefined, text: string): void {
  if (file) {
    fs.writeFileSync(file, text);
    process.stderr.write(`wrote ${file}\n`);
  } else out(text);
}

export const debugLogsCommand = command({
  name: 'debug logs',
  summary: 'logs of every component',
  flags: {
    ...G,
    file: { type: 'string', short: 'f', placeholder: 'FILE', description: 'write them to FILE' },
    'errors-only': { type: 'boolean', description: 'only error lines (and rejections) of the current run' },
    namespace: INSTALL_NS,
  },
  async run(values) {
    const backend = await backendFrom(values, { flag: '-n', value: values.namespace });
    let text = '';
    let failed = false;
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
    writeOut(values.file, text);
    return failed ? 1 : 0;
  },
});

export const debugYamlCommand = command({
  name: 'debug yaml',
  summary: 'every resource with its status, as one YAML stream',
  flags: { ...G, file: { type: 'string', short: 'f', placeholder: 'FILE', description: 'write it to FILE' }, namespace: INSTALL_NS },
  async run(values) {
    const backend = await backendFrom(values, { flag: '-n', value: values.namespace });
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
    writeOut(values.file, [...install.objects, ...items].map((r) => stringify(r, { lineWidth: 0 })).join('---\n'));
    return 0;
  },
});

export const versionCommand = command({
  name: 'version',
  summary: 'client and server versions',
  flags: {
    ...G,
    namespace: INSTALL_NS,
    output: { type: 'choice', short: 'o', choices: ['table', 'yaml', 'json'], default: 'table', description: 'output format' },
  },
  async run(values) {
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
  },
});

export const validateCommand = command({
  name: 'validate',
  summary: 'check resources as the controller would, no server (exit 1: one would be Rejected)',
  operands: '[FILE|DIR…]',
  details:
    'Gives every resource the status the controller would give it, without a server; exits 1 when one would be\n' +
    'Rejected (or a Warning, with Settings gateway.validation.allowWarnings: false) or a document does not load.',
  flags: {
    file: { type: 'strings', short: 'f', placeholder: 'FILE|DIR|-', description: 'resources to check (- for stdin)' },
    output: { type: 'choice', short: 'o', choices: ['text', 'json'], default: 'text', description: 'output format' },
  },
  async run(values, operands) {
    const { validatePaths } = await import('../validate.js');
    return validatePaths([...values.file, ...operands], out, values.output);
  },
});

const CLUSTER = {
  kubeconfig: G.kubeconfig,
  'kube-context': G['kube-context'],
  namespace: { type: 'string', short: 'n', default: 'legate-system', placeholder: 'NS', description: 'where Legate runs' },
  release: { type: 'string', default: 'legate', placeholder: 'NAME', description: 'the Helm release' },
  helm: { type: 'string', placeholder: 'PATH', description: 'the helm command, v3 or v4 (default helm on PATH)' },
} as const;

export const installCommand = command({
  name: 'install',
  summary: 'install or upgrade Legate in a cluster (Helm chart)',
  details:
    'Installs Legate (the Helm chart install/helm/legate) into a cluster, or upgrades the release:\n' +
    'the controller, the gateway proxies (Envoy), extauth, graphql, ratelimit, the CRDs and the Settings.',
  flags: {
    ...CLUSTER,
    values: { type: 'strings', short: 'f', placeholder: 'FILE', description: 'chart values (install/helm/legate/values.yaml lists them)' },
    set: { type: 'strings', placeholder: 'KEY=VALUE', description: 'one chart value, e.g. --set glooGroups=true' },
    'dry-run': { type: 'boolean', description: 'print the manifests (CRDs included) instead of installing them' },
    chart: { type: 'string', placeholder: 'DIR', description: 'the chart (default the one shipped with legatectl)' },
  },
  async run(values) {
    return (await import('./install.js')).install(values, out);
  },
});

export const uninstallCommand = command({
  name: 'uninstall',
  summary: 'remove the release (--all: also the CRDs and the namespace)',
  details: 'Removes the Legate release. Its CRDs (and so every Legate resource) and the namespace stay unless --all is given.',
  flags: {
    ...CLUSTER,
    all: { type: 'boolean', description: "also delete Legate's CRDs (with every resource of their kinds) and the namespace" },
  },
  async run(values) {
    return (await import('./install.js')).uninstall(values, out);
  },
});

export const READ_COMMANDS: readonly Command[] = [checkCommand, getCommand, versionCommand, validateCommand];
export const PROXY_COMMANDS: readonly Command[] = [
  proxyUrlCommand,
  proxyServedConfigCommand,
  proxyDumpCommand,
  proxyLogsCommand,
  proxyStatsCommand,
];
export const DEBUG_COMMANDS: readonly Command[] = [debugLogsCommand, debugYamlCommand];
