// Access-token auth: AuthConfig resources -> configs for the extauth service (its own xDS role), and
// `options.extauth` on virtual hosts and routes -> ext_authz bindings (which AuthConfig, which of the user's own
// servers of Settings namedExtauth or Settings extauth, or none).
import { edgeCredential, stepReads } from '../../../../common/auth-config.js';
import { ExtensionRoles, ExtensionTypeUrls, type AuthConfigConfig } from '../../../../common/contract.js';
import type { ExtauthOptions } from './schema.js';
import type { ListenerExtauth } from '../../../api/schemas.js';
import type { ServiceAddress } from '../../envoy-json.js';
import type { BindSink, Feature, Resolved } from '../../feature.js';
import type { AuthBindingIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { bindListenerExtauth } from './listener.js';
import { extauthRender, SETTINGS_EXTAUTH_SERVER, type CustomAuthServer } from './render.js';
import { translateAuthConfig } from './resolve.js';
import type { RegoCheck } from './steps/common.js';

/**
 * `skip`: the header and value with which a request skips ext_authz (the wasm edge cache); `servers`: the user's own
 * ext_authz servers of Settings namedExtauth, by name.
 */
export function extauthFeature(
  service: ServiceAddress,
  skip?: { header: string; value: string },
  servers: Readonly<Record<string, CustomAuthServer>> = {},
  defaults?: ListenerExtauth,
  regoCheck?: RegoCheck,
): Feature {
  // config id -> what render needs of configs that are not bearer-only (from the last resolve): the API
  // key headers Envoy must send, and that the wasm bearer pre-check must not run where they bind
  return {
    name: 'extauth',
    kinds: ['AuthConfig'],
    resolve(ctx) {
      const authConfigs = ctx.resolveEach(ctx.ofKind('AuthConfig'), (ac) =>
        translateAuthConfig(ac, ctx.index.secrets, ctx.index.configMaps, regoCheck),
      );
      return {
        bindGateway(gw, ir, sink) {
          const own = gw.spec.httpGateway?.options?.extauth;
          // Settings extauth under the Gateway's own (its server reference already names a namespace)
          const o = defaults ? { ...defaults, ...own } : own;
          if (o) ir.extauth = bindListenerExtauth(o, gw.metadata.namespace, ctx.upstreams(), sink, own ? undefined : 'Settings extauth');
        },
        bindRoute(route, ir, site, sink) {
          const ns = site.namespace;
          const ext = route.options?.extauth;
          if (ext) {
            const auth = authBinding(ext, `${site.where}.options.extauth`, 'route', ir.name, ns, authConfigs, servers, sink);
            if (auth) ir.auth = auth;
          }
          // a weighted destination's extauth applies when it is picked (ExtAuthzPerRoute on its weighted cluster)
          (route.routeAction?.multi?.destinations ?? []).forEach((d, j) => {
            const dext = d.options?.extauth;
            if (!dext) return;
            const where = `${site.where}.routeAction.multi.destinations[${j}].options.extauth`;
            const auth = authBinding(dext, where, 'weighted_destination', ir.name, ns, authConfigs, servers, sink);
            // a destination of weight 0 gets no traffic and has no cluster; its reference is still checked
            const cluster = ir.action.type === 'route' ? ir.action.clusters.find((c) => c.destination === j) : undefined;
            if (auth && cluster) cluster.auth = auth;
          });
        },
        bindVirtualHost(vs, ir, sink) {
          const ext = vs.spec.virtualHost.options?.extauth;
          if (!ext) return;
          const where = 'virtualHost.options.extauth';
          const auth = authBinding(ext, where, 'virtual_host', ir.name, vs.metadata.namespace, authConfigs, servers, sink);
          if (auth && !('disabled' in auth)) ir.auth = auth;
        },
        routeNamed(route) {
          // the route's final name is what the extauth service logs as the source of a check
          const named = (auth: AuthBindingIR): AuthBindingIR => ('configId' in auth ? { ...auth, sourceName: route.name } : auth);
          let out = route.auth && 'configId' in route.auth ? { ...route, auth: named(route.auth) } : route;
          const a = out.action;
          if (a.type === 'route' && a.clusters.some((c) => c.auth && 'configId' in c.auth))
            out = { ...out, action: { ...a, clusters: a.clusters.map((c) => (c.auth ? { ...c, auth: named(c.auth) } : c)) } };
          return out;
        },
        extensionResources() {
          const configs = [...authConfigs.results.values()].sort((a, b) => a.name.localeCompare(b.name));
          return [
            {
              role: ExtensionRoles.extauth,
              typeUrl: ExtensionTypeUrls.authConfig,
              resources: configs.map((ac) => ({ name: ac.name, resource: { ...ac } })),
            },
          ];
        },
      };
    },
    render: extauthRender(service, skip, servers),
  };
}

/**
 * extauth options -> binding. A missing or rejected AuthConfig is reported but the binding stays: the
 * extauth service denies an unknown config, so the route stays closed until the reference is fixed.
 */
function authBinding(
  ext: ExtauthOptions,
  where: string,
  sourceType: Extract<AuthBindingIR, { configId: string }>['sourceType'],
  sourceName: string,
  ns: string,
  authConfigs: Resolved<AuthConfigConfig>,
  servers: Readonly<Record<string, CustomAuthServer>>,
  sink: BindSink,
): AuthBindingIR | undefined {
  if (ext.disable) return { disabled: true };
  if (ext.customAuth) {
    const { contextExtensions } = ext.customAuth;
    // without a name, Gloo checks with the server of Settings `extauth` (open-source Gloo's extauthzServerRef)
    const name = ext.customAuth.name || SETTINGS_EXTAUTH_SERVER;
    if (name === SETTINGS_EXTAUTH_SERVER && !Object.hasOwn(servers, name)) {
      sink.problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.customAuth: without a name it asks the server of Settings extauth.extauthzServerRef, which is not set ` +
          "(Legate's own extauth service checks AuthConfigs, with configRef); set it, or name a server of Settings namedExtauth",
      });
      return undefined;
    }
    // as Gloo, an unknown server is an error: the resource is rejected rather than served unchecked
    if (!Object.hasOwn(servers, name)) {
      const known = Object.keys(servers)
        .filter((n) => n !== SETTINGS_EXTAUTH_SERVER)
        .sort();
      sink.problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.customAuth.name: no server ${JSON.stringify(name)} in Settings namedExtauth` +
          (known.length ? ` (known: ${known.join(', ')})` : ' (it has none)'),
      });
      return undefined;
    }
    return { customAuth: name, ...(contextExtensions && Object.keys(contextExtensions).length ? { contextExtensions } : {}) };
  }
  if (!ext.configRef) return undefined;
  const acNs = ext.configRef.namespace ?? ns;
  const key = nsName(acNs, ext.configRef.name);
  const name = `${acNs}.${ext.configRef.name}`;
  if (authConfigs.rejected.has(key)) {
    sink.warnings.push({
      code: 'AuthConfigRejected',
      message: `${where}.configRef: AuthConfig ${name} is rejected; requests are denied until it is fixed`,
    });
  } else if (!authConfigs.results.has(key)) {
    sink.warnings.push({
      code: 'AuthConfigNotFound',
      message: `${where}.configRef: AuthConfig ${name} not found; requests are denied until it exists`,
    });
  }
  const config = authConfigs.results.get(key);
  const binding: AuthBindingIR = {
    configId: name,
    ...(config?.version !== undefined ? { configVersion: config.version } : {}),
    sourceType,
    sourceName,
  };
  const reads = (config?.steps ?? []).map(stepReads);
  const headers = reads.flatMap((r) => (r.headers === '*' ? [] : r.headers));
  // with booleanExpr, even bearer-only steps may allow without a token (`!jwt`)
  if (reads.some((r) => !r.bearer) || config?.booleanExpr !== undefined) Object.assign(binding, { bearerOptional: true });
  if (headers.length) Object.assign(binding, { headers: [...new Set(headers)].sort() });
  const credential = config?.version !== undefined ? edgeCredential(config.steps, config.booleanExpr) : undefined;
  if (credential?.kind === 'cookie')
    Object.assign(binding, { edgeCredential: { cookie: credential.name, checkPaths: credential.checkPaths } });
  if (credential?.kind === 'authorization') Object.assign(binding, { edgeCredential: { authorization: true } });
  if (reads.some((r) => r.headers === '*')) Object.assign(binding, { allHeaders: true });
  const namespaces = [...new Set(reads.flatMap((r) => r.metadata ?? []))].sort();
  if (namespaces.length) Object.assign(binding, { metadataNamespaces: namespaces });
  return binding;
}
