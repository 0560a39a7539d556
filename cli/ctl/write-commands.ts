// glooctl's writing commands: create vs|upstream|secret|authconfig, add route, remove route, edit,
// delete. In file mode they write the directory `legate run` watches; on a cluster they go through
// the API server (cli/ctl/store.ts). The store and the validation load only when one of them runs.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { canonicalApiVersion, type KindName } from '../../controller/api/kinds.js';
import { LEGATE_NAMESPACE } from '../../controller/api/meta.js';
import { command, toHostPort, UsageError, type Command } from '../flags.js';
import { findStateDir, readRunState } from '../paths.js';
import { CliError } from './backend.js';
import { kindArg } from './commands.js';
import { backendFrom, GLOBAL_FLAGS, out, type GlobalValues } from './context.js';
import type { Resource, Store } from './store.js';

const WRITE = {
  ...GLOBAL_FLAGS,
  namespace: { type: 'string', short: 'n', placeholder: 'NS', description: 'the namespace (new resources: the install namespace)' },
  config: {
    type: 'string',
    placeholder: 'DIR',
    description: "file mode: the directory 'legate run --config' watches (default: the running instance's)",
  },
  output: { type: 'choice', short: 'o', choices: ['yaml', 'json', 'kube-yaml'], description: 'print the resource written, in this format' },
  'dry-run': { type: 'boolean', description: 'print the resource instead of writing it (YAML, or the -o format)' },
} as const;

type WriteValues = GlobalValues & {
  namespace: string | undefined;
  config: string | undefined;
  output: 'yaml' | 'json' | 'kube-yaml' | undefined;
  'dry-run': boolean;
};

/**
 * The store of the backend the flags name: the cluster's API server, or the directory `legate run` watches
 * (--config DIR names one without a running instance).
 */
async function openStore(values: WriteValues): Promise<Store> {
  const { FileStore } = await import('./store.js');
  if (values.config) {
    const kube = (['kubeconfig', 'kube-context', 'install-namespace', 'pod-selector'] as const).find((f) => values[f]);
    if (values.backend === 'kubernetes' || kube)
      throw new UsageError(`--config names a watched directory (file mode); not with --${kube ?? 'backend'}`);
    const dir = path.resolve(values.config);
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new CliError(`--config: ${dir} is not a directory`);
    const state = readRunState(values['state-dir'] ?? findStateDir().dir);
    return new FileStore(dir, state?.writeNamespace ?? LEGATE_NAMESPACE);
  }
  const backend = await backendFrom(values);
  if (backend.mode === 'kubernetes') {
    const kube = backend as import('./kube-backend.js').KubeBackend;
    const { KubeStore } = await import('./kube-store.js');
    return new KubeStore(kube.client, kube.installNamespace);
  }
  const state = readRunState(values['state-dir'] ?? findStateDir().dir);
  if (!state) {
    throw new CliError(
      "no watched directory: no running 'legate run' found here; pass --config DIR (the directory 'legate run --config' watches)",
    );
  }
  return new FileStore(state.configDir, state.writeNamespace);
}

function nameOperand(operands: readonly string[], flag: string | undefined, what: string): string {
  const name = flag ?? operands[0];
  if (!name) throw new UsageError(`${what}: which name? e.g. legatectl ${what} NAME`);
  if (operands.length > (flag ? 0 : 1)) throw new UsageError(`${what}: unexpected ${JSON.stringify(operands[flag ? 0 : 1])}`);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 253) {
    throw new UsageError(`${what}: ${JSON.stringify(name)} is not a valid name (lower case letters, digits, '-' and '.')`);
  }
  return name;
}

function printResource(values: WriteValues, r: Resource): void {
  if (values.output === 'json') out(JSON.stringify(r, null, 2) + '\n');
  else if (values.output) out(stringify(r, { lineWidth: 0 }));
}

/** Writes a new resource (or prints it with --dry-run), and says where. */
async function create(values: WriteValues, make: (namespace: string) => Resource): Promise<number> {
  if (values['dry-run']) {
    printResource({ ...values, output: values.output ?? 'yaml' }, make(values.namespace ?? LEGATE_NAMESPACE));
    return 0;
  }
  const store = await openStore(values);
  const r = make(values.namespace ?? store.defaultNamespace);
  const where = await store.create(r);
  process.stderr.write(`created ${r.kind.toLowerCase()} ${r.metadata.namespace}.${r.metadata.name} (${where})\n`);
  printResource(values, r);
  return 0;
}

const resource = (kind: KindName, namespace: string, name: string, body: Record<string, unknown>): Resource => ({
  apiVersion: canonicalApiVersion(kind),
  kind,
  metadata: { name, namespace },
  ...body,
});

/** `k=v,k2=v2` (repeatable) as a map. */
function labels(list: readonly string[], flag: string): Record<string, string> | undefined {
  const pairs = list.flatMap((l) => l.split(',')).filter(Boolean);
  if (!pairs.length) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new UsageError(`--${flag}: expected KEY=VALUE, got ${JSON.stringify(p)}`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

const NAME = { type: 'string', placeholder: 'NAME', description: 'the name (or give it as the operand)' } as const;

export const createVsCommand = command({
  name: 'create virtualservice',
  aliases: ['vs'],
  summary: 'a VirtualService for some domains (add routes with add route)',
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    domains: { type: 'strings', placeholder: 'DOMAIN[,DOMAIN]', description: "the domains it serves (default '*')" },
    'display-name': { type: 'string', placeholder: 'TEXT', description: 'descriptive name' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create vs');
    const domains = values.domains.flatMap((d) => d.split(',')).filter(Boolean);
    return create(values, (ns) =>
      resource('VirtualService', ns, name, {
        spec: {
          ...(values['display-name'] ? { displayName: values['display-name'] } : {}),
          virtualHost: { domains: domains.length ? domains : ['*'] },
        },
      }),
    );
  },
});

export const createUpstreamStaticCommand = command({
  name: 'create upstream static',
  summary: 'an Upstream of fixed hosts',
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    'static-hosts': { type: 'strings', placeholder: 'HOST:PORT[,…]', description: 'its hosts (port 80 when left out)' },
    'static-outbound-tls': { type: 'boolean', description: 'connect to them with TLS' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create upstream static');
    const hosts = values['static-hosts']
      .flatMap((h) => h.split(','))
      .filter(Boolean)
      .map((h) => {
        const { host, port } = toHostPort(/:\d+$/.test(h) ? h : `${h}:80`, 'static-hosts');
        return { addr: host, port };
      });
    if (!hosts.length) throw new UsageError('--static-hosts HOST:PORT is required');
    return create(values, (ns) =>
      resource('Upstream', ns, name, { spec: { static: { hosts, ...(values['static-outbound-tls'] ? { useTls: true } : {}) } } }),
    );
  },
});

export const createUpstreamKubeCommand = command({
  name: 'create upstream kube',
  summary: 'an Upstream for a Kubernetes Service',
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    'kube-service': { type: 'string', placeholder: 'NAME', required: true, description: 'the Service' },
    'kube-service-namespace': { type: 'string', placeholder: 'NS', default: 'default', description: "the Service's namespace" },
    'kube-service-port': { type: 'port', default: 80, description: 'the Service port' },
    'kube-service-labels': { type: 'strings', placeholder: 'K=V[,K=V]', description: 'only the endpoints with these labels' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create upstream kube');
    const selector = labels(values['kube-service-labels'], 'kube-service-labels');
    return create(values, (ns) =>
      resource('Upstream', ns, name, {
        spec: {
          kube: {
            serviceName: values['kube-service'],
            serviceNamespace: values['kube-service-namespace'],
            servicePort: values['kube-service-port'],
            ...(selector ? { selector } : {}),
          },
        },
      }),
    );
  },
});

const b64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');

function readFlagFile(file: string | undefined, flag: string): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new UsageError(`--${flag}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

export const createSecretTlsCommand = command({
  name: 'create secret tls',
  summary: 'a TLS Secret (tls.crt, tls.key, ca.crt) from PEM files',
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    certchain: { type: 'string', placeholder: 'FILE', description: 'the certificate chain' },
    privatekey: { type: 'string', placeholder: 'FILE', description: 'its private key' },
    rootca: { type: 'string', placeholder: 'FILE', description: 'the CA that checks peers' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create secret tls');
    const cert = readFlagFile(values.certchain, 'certchain');
    const key = readFlagFile(values.privatekey, 'privatekey');
    const ca = readFlagFile(values.rootca, 'rootca');
    if (!cert && !ca) throw new UsageError('create secret tls: give --certchain and --privatekey, or --rootca');
    if (Boolean(cert) !== Boolean(key)) throw new UsageError('--certchain and --privatekey go together');
    const data = {
      ...(cert ? { 'tls.crt': b64(cert) } : {}),
      ...(key ? { 'tls.key': b64(key) } : {}),
      ...(ca ? { 'ca.crt': b64(ca) } : {}),
    };
    return create(values, (ns) => resource('Secret', ns, name, { type: cert ? 'kubernetes.io/tls' : 'Opaque', data }));
  },
});

export const createSecretOauthCommand = command({
  name: 'create secret oauth',
  summary: "an OAuth client's secret (data key client-secret)",
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    'client-secret': { type: 'string', placeholder: 'SECRET', required: true, description: 'the client secret' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create secret oauth');
    return create(values, (ns) =>
      resource('Secret', ns, name, { type: 'extauth.solo.io/oauth', data: { 'client-secret': b64(values['client-secret']) } }),
    );
  },
});

export const createSecretApikeyCommand = command({
  name: 'create secret apikey',
  summary: 'an API key Secret (data key api-key) with labels an AuthConfig selects',
  operands: 'NAME',
  flags: {
    ...WRITE,
    name: NAME,
    apikey: { type: 'string', placeholder: 'KEY', description: 'the key' },
    'apikey-generate': { type: 'boolean', description: 'generate a key (printed on stderr)' },
    'apikey-labels': { type: 'strings', placeholder: 'K=V[,K=V]', description: 'labels of the Secret' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create secret apikey');
    if (Boolean(values.apikey) === values['apikey-generate']) throw new UsageError('give one of --apikey KEY, --apikey-generate');
    const key = values.apikey ?? randomBytes(24).toString('base64url');
    if (values['apikey-generate'] && !values['dry-run']) process.stderr.write(`generated API key: ${key}\n`);
    const lbls = labels(values['apikey-labels'], 'apikey-labels');
    return create(values, (ns) => {
      const r = resource('Secret', ns, name, { type: 'extauth.solo.io/apikey', data: { 'api-key': b64(key) } });
      if (lbls) r.metadata.labels = lbls;
      return r;
    });
  },
});

/** A repeatable flag whose values may also be comma-separated (glooctl's string slices). */
const list = (values: readonly string[]): string[] => values.flatMap((v) => v.split(',')).filter(Boolean);

/** `--opa-module-ref NS.NAME`: a ConfigMap of Rego modules (a namespace has no dot; the name may). */
function moduleRef(ref: string): { name: string; namespace: string } {
  const i = ref.indexOf('.');
  if (i <= 0 || i === ref.length - 1)
    throw new UsageError(`--opa-module-ref: expected NAMESPACE.NAME of a ConfigMap, got ${JSON.stringify(ref)}`);
  return { namespace: ref.slice(0, i), name: ref.slice(i + 1) };
}

const OIDC_FLAGS = [
  'oidc-auth-issuer-url',
  'oidc-auth-app-url',
  'oidc-auth-callback-path',
  'oidc-auth-client-id',
  'oidc-auth-client-secret-name',
  'oidc-auth-client-secret-namespace',
] as const;

export const createAuthConfigCommand = command({
  name: 'create authconfig',
  aliases: ['ac'],
  summary: 'an AuthConfig: OIDC login, API keys and OPA steps, run in that order',
  operands: 'NAME',
  details:
    "glooctl's flags. Each group of flags adds a step (its --enable-… switch is implied by the group's other flags), in\n" +
    "glooctl's order: oauth2.oidcAuthorizationCode (the fields glooctl writes into the deprecated oauth step), apiKeyAuth,\n" +
    'opaAuth. The client secret is a Secret like `legatectl create secret oauth` makes; OPA modules are ConfigMaps.',
  flags: {
    ...WRITE,
    name: NAME,
    'enable-oidc-auth': { type: 'boolean', description: 'add an OIDC authorization code step (browser login at the issuer)' },
    'oidc-auth-issuer-url': { type: 'string', placeholder: 'URL', description: 'the OpenID provider (its discovery document)' },
    'oidc-auth-app-url': { type: 'string', placeholder: 'URL', description: 'the public URL of your app' },
    'oidc-auth-callback-path': {
      type: 'string',
      placeholder: 'PATH',
      description: 'the callback path, relative to the app URL (default /oidc-gloo-callback)',
    },
    'oidc-auth-client-id': { type: 'string', placeholder: 'ID', description: 'the client ID registered with the provider' },
    'oidc-auth-client-secret-name': { type: 'string', placeholder: 'NAME', description: "the Secret of the client's secret" },
    'oidc-auth-client-secret-namespace': { type: 'string', placeholder: 'NS', description: "that Secret's namespace (default -n's)" },
    'oidc-scope': { type: 'strings', placeholder: 'SCOPE[,SCOPE]', description: "scopes to ask for besides 'openid'" },
    'auth-endpoint-query-params': {
      type: 'strings',
      placeholder: 'K=V[,K=V]',
      description: 'query parameters added to the authorization request to the provider',
    },
    'enable-apikey-auth': { type: 'boolean', description: 'add an API key step' },
    'apikey-label-selector': { type: 'strings', placeholder: 'K=V[,K=V]', description: 'the API key Secrets with these labels' },
    'apikey-secret-name': { type: 'string', placeholder: 'NAME', description: 'one API key Secret' },
    'apikey-secret-namespace': { type: 'string', placeholder: 'NS', description: "that Secret's namespace (default -n's)" },
    'enable-opa-auth': { type: 'boolean', description: 'add an OPA step (Rego evaluated in extauth)' },
    'opa-query': {
      type: 'string',
      placeholder: 'QUERY',
      description: 'the query to evaluate on each request, e.g. data.test.allow == true',
    },
    'opa-module-ref': { type: 'strings', placeholder: 'NS.NAME', description: 'a ConfigMap holding Rego modules' },
  },
  run(values, operands) {
    const name = nameOperand(operands, values.name, 'create authconfig');
    const scopes = list(values['oidc-scope']);
    const queryParams = labels(values['auth-endpoint-query-params'], 'auth-endpoint-query-params');
    const oidc =
      values['enable-oidc-auth'] || OIDC_FLAGS.some((f) => values[f] !== undefined) || scopes.length > 0 || queryParams !== undefined;
    if (oidc) {
      const missing = (
        ['oidc-auth-issuer-url', 'oidc-auth-app-url', 'oidc-auth-client-id', 'oidc-auth-client-secret-name'] as const
      ).filter((f) => !values[f]);
      if (missing.length) throw new UsageError(`the OIDC step needs ${missing.map((f) => `--${f}`).join(', ')}`);
    }
    const labelSelector = labels(values['apikey-label-selector'], 'apikey-label-selector');
    const secret = values['apikey-secret-name'];
    if (values['apikey-secret-namespace'] !== undefined && !secret)
      throw new UsageError('--apikey-secret-namespace needs --apikey-secret-name');
    const apikey = values['enable-apikey-auth'] || labelSelector !== undefined || secret !== undefined;
    if (labelSelector && secret) {
      throw new UsageError(
        "give one of --apikey-label-selector, --apikey-secret-name: Legate's apiKeyAuth takes a selector or Secret refs",
      );
    }
    if (apikey && !labelSelector && !secret) {
      throw new UsageError('the API key step needs --apikey-label-selector K=V or --apikey-secret-name NAME');
    }
    const modules = list(values['opa-module-ref']).map(moduleRef);
    const opa = values['enable-opa-auth'] || values['opa-query'] !== undefined || modules.length > 0;
    if (opa && !values['opa-query']?.trim()) throw new UsageError('the OPA step needs --opa-query QUERY');
    if (!oidc && !apikey && !opa) {
      throw new UsageError(
        'create authconfig: which steps? --enable-oidc-auth, --enable-apikey-auth and/or --enable-opa-auth, with their flags',
      );
    }
    return create(values, (ns) => {
      const configs: Record<string, unknown>[] = [];
      if (oidc) {
        configs.push({
          oauth2: {
            oidcAuthorizationCode: {
              appUrl: values['oidc-auth-app-url'],
              callbackPath: values['oidc-auth-callback-path'] ?? '/oidc-gloo-callback',
              clientId: values['oidc-auth-client-id'],
              clientSecretRef: {
                name: values['oidc-auth-client-secret-name'],
                namespace: values['oidc-auth-client-secret-namespace'] ?? ns,
              },
              issuerUrl: values['oidc-auth-issuer-url'],
              ...(queryParams ? { authEndpointQueryParams: queryParams } : {}),
              ...(scopes.length ? { scopes } : {}),
            },
          },
        });
      }
      if (apikey) {
        configs.push({
          apiKeyAuth: {
            ...(labelSelector ? { labelSelector } : {}),
            ...(secret ? { apiKeySecretRefs: [{ name: secret, namespace: values['apikey-secret-namespace'] ?? ns }] } : {}),
          },
        });
      }
      if (opa) configs.push({ opaAuth: { ...(modules.length ? { modules } : {}), query: values['opa-query'] } });
      return resource('AuthConfig', ns, name, { spec: { configs } });
    });
  },
});

/** The namespace of the one resource of this kind and name (-n, else found in a single namespace). */
async function namespaceOf(store: Store, kind: KindName, name: string, given: string | undefined): Promise<string | undefined> {
  if (given) return given;
  const found = await store.find(kind, name);
  const namespaces = [...new Set(found.map((r) => r.metadata.namespace ?? 'default'))];
  if (namespaces.length > 1) throw new UsageError(`${kind} ${name} is in several namespaces (${namespaces.join(', ')}); pass -n NAMESPACE`);
  return namespaces[0];
}

const ROUTES = ['spec', 'virtualHost', 'routes'] as const;

export const addRouteCommand = command({
  name: 'add route',
  summary: 'insert a route into a VirtualService (created when missing, for domain *)',
  details: 'Routes are matched in order; --index says where the new one goes (0: first).',
  flags: {
    ...WRITE,
    name: { type: 'string', placeholder: 'VS', default: 'default', description: 'the VirtualService' },
    'path-prefix': { type: 'string', short: 'p', placeholder: 'PATH', description: 'match requests whose path starts with PATH' },
    'path-exact': { type: 'string', short: 'e', placeholder: 'PATH', description: 'match this path only' },
    'path-regex': { type: 'string', short: 'r', placeholder: 'REGEX', description: 'match paths against a regular expression' },
    method: { type: 'strings', short: 'm', placeholder: 'METHOD', description: 'match these HTTP methods only' },
    'dest-name': { type: 'string', short: 'u', placeholder: 'UPSTREAM', description: 'the Upstream it routes to' },
    'dest-namespace': {
      type: 'string',
      short: 's',
      placeholder: 'NS',
      description: "the Upstream's namespace (default the install namespace)",
    },
    'upstream-group-name': { type: 'string', placeholder: 'NAME', description: 'an UpstreamGroup to route to instead' },
    'upstream-group-namespace': { type: 'string', placeholder: 'NS', description: "the UpstreamGroup's namespace" },
    'prefix-rewrite': { type: 'string', placeholder: 'PATH', description: 'replace the matched prefix with PATH' },
    index: { type: 'int', short: 'x', default: 0, min: 0, description: 'where in the route list it goes' },
  },
  async run(values) {
    const paths = [values['path-prefix'], values['path-exact'], values['path-regex']].filter((p) => p !== undefined);
    if (paths.length > 1) throw new UsageError('give one of --path-prefix, --path-exact, --path-regex');
    if (Boolean(values['dest-name']) === Boolean(values['upstream-group-name'])) {
      throw new UsageError('give one destination: --dest-name UPSTREAM or --upstream-group-name NAME');
    }
    const store = values['dry-run'] ? undefined : await openStore(values);
    const install = store?.defaultNamespace ?? LEGATE_NAMESPACE;
    const matcher: Record<string, unknown> =
      values['path-exact'] !== undefined
        ? { exact: values['path-exact'] }
        : values['path-regex'] !== undefined
          ? { regex: values['path-regex'] }
          : { prefix: values['path-prefix'] ?? '/' };
    if (values.method.length) matcher['methods'] = values.method.flatMap((m) => m.split(',')).map((m) => m.toUpperCase());
    const route = {
      matchers: [matcher],
      routeAction: values['dest-name']
        ? { single: { upstream: { name: values['dest-name'], namespace: values['dest-namespace'] ?? install } } }
        : { upstreamGroup: { name: values['upstream-group-name'], namespace: values['upstream-group-namespace'] ?? install } },
      ...(values['prefix-rewrite'] !== undefined ? { options: { prefixRewrite: values['prefix-rewrite'] } } : {}),
    };
    if (!store) {
      out(stringify(route, { lineWidth: 0 }));
      return 0;
    }
    const ns = (await namespaceOf(store, 'VirtualService', values.name, values.namespace)) ?? values.namespace ?? store.defaultNamespace;
    if (!(await store.find('VirtualService', values.name, ns)).length) {
      const vs = resource('VirtualService', ns, values.name, { spec: { virtualHost: { domains: ['*'], routes: [route] } } });
      const where = await store.create(vs);
      process.stderr.write(`created virtualservice ${ns}.${values.name} with the route (${where})\n`);
      printResource(values, vs);
      return 0;
    }
    const { where, value } = await store.update('VirtualService', ns, values.name, (e) => {
      const length = e.length(ROUTES);
      if (values.index > length) throw new UsageError(`--index ${values.index}: the VirtualService has ${length} routes`);
      e.insert(ROUTES, values.index, route);
    });
    process.stderr.write(`added route ${values.index} to virtualservice ${ns}.${values.name} (${where})\n`);
    printResource(values, value);
    return 0;
  },
});

export const removeRouteCommand = command({
  name: 'remove route',
  summary: 'remove a route from a VirtualService',
  flags: {
    ...WRITE,
    name: { type: 'string', placeholder: 'VS', default: 'default', description: 'the VirtualService' },
    index: { type: 'int', short: 'x', default: 0, min: 0, description: 'the route to remove (0: the first)' },
  },
  async run(values) {
    const store = await openStore(values);
    const ns = await namespaceOf(store, 'VirtualService', values.name, values.namespace);
    if (!ns) throw new CliError(`VirtualService ${values.name} not found`);
    const { where, value } = await store.update('VirtualService', ns, values.name, (e) => {
      const length = e.length(ROUTES);
      if (values.index >= length) throw new UsageError(`--index ${values.index}: the VirtualService has ${length} routes`);
      e.remove(ROUTES, values.index);
    });
    process.stderr.write(`removed route ${values.index} from virtualservice ${ns}.${values.name} (${where})\n`);
    printResource(values, value);
    return 0;
  },
});

const BY_NAME = {
  ...GLOBAL_FLAGS,
  namespace: WRITE.namespace,
  config: WRITE.config,
} as const;

export const editCommand = command({
  name: 'edit',
  summary: "open a resource's YAML in $EDITOR; on save it is validated and written",
  operands: 'KIND NAME',
  details:
    'The editor is VISUAL, else EDITOR, else vi. File mode keeps the comments of the file; a resource the controller would\n' +
    'reject is not written (the edited copy is kept, and its path printed).',
  flags: BY_NAME,
  async run(values, operands) {
    const [kindText, name, ...extra] = operands;
    const kind = kindArg(kindText, 'edit');
    if (!name || extra.length) throw new UsageError('usage: legatectl edit KIND NAME');
    const store = await openStore({ ...values, output: undefined, 'dry-run': false });
    const ns = await namespaceOf(store, kind, name, values.namespace);
    if (!ns) throw new CliError(`${kind} ${name} not found`);
    const { text, save } = await store.editable(kind, ns, name);
    const file = path.join(os.tmpdir(), `legatectl-edit-${kind.toLowerCase()}-${ns}-${name}-${process.pid}.yaml`);
    fs.writeFileSync(file, text);
    const editor = process.env['VISUAL'] || process.env['EDITOR'] || 'vi';
    const ran = spawnSync(`${editor} ${JSON.stringify(file)}`, { shell: true, stdio: 'inherit' });
    if (ran.status !== 0)
      throw new CliError(`the editor (${editor}) exited with ${ran.status ?? ran.signal ?? 'an error'}; nothing written`);
    const edited = fs.readFileSync(file, 'utf8');
    if (edited === text) {
      fs.rmSync(file, { force: true });
      process.stderr.write('Edit cancelled, no changes made.\n');
      return 0;
    }
    try {
      const where = await save(edited);
      fs.rmSync(file, { force: true });
      process.stderr.write(`edited ${kind.toLowerCase()} ${ns}.${name} (${where})\n`);
      return 0;
    } catch (err) {
      if (err instanceof CliError) throw new CliError(`${err.message} (your edit is kept in ${file})`);
      throw err;
    }
  },
});

export const deleteCommand = command({
  name: 'delete',
  summary: 'delete a resource',
  operands: 'KIND NAME',
  flags: BY_NAME,
  async run(values, operands) {
    const [kindText, name, ...extra] = operands;
    const kind = kindArg(kindText, 'delete');
    if (!name || extra.length) throw new UsageError('usage: legatectl delete KIND NAME');
    const store = await openStore({ ...values, output: undefined, 'dry-run': false });
    const ns = await namespaceOf(store, kind, name, values.namespace);
    if (!ns) throw new CliError(`${kind} ${name} not found`);
    const where = await store.delete(kind, ns, name);
    process.stderr.write(`deleted ${kind.toLowerCase()} ${ns}.${name} (${where})\n`);
    return 0;
  },
});

export const CREATE_COMMANDS = {
  vs: createVsCommand,
  upstream: [createUpstreamStaticCommand, createUpstreamKubeCommand],
  secret: [createSecretTlsCommand, createSecretOauthCommand, createSecretApikeyCommand],
  authconfig: createAuthConfigCommand,
} satisfies Record<string, Command | Command[]>;
