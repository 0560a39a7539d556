// JWT verification and claims-based RBAC in Envoy itself (Gloo Enterprise's `jwt`, `jwtStaged` and
// `rbac` options): Envoy's jwt_authn filter checks tokens against each virtual host's providers (local
// keys, or a JWKS fetched through an Upstream) before or after ext_authz, copies claims to headers, and
// leaves the payload in dynamic metadata where Envoy's RBAC filter matches the policies' claims. With
// Settings rbac.requireRbac, a virtual host or route that no rbac option covers refuses every request.
import type { Feature } from '../../feature.js';
import { jwtRender } from './render.js';
import { jwtBinding } from './resolve.js';

export const jwtFeature: Feature = {
  name: 'jwt',
  kinds: [],
  resolve: (ctx) => jwtBinding(ctx, false),
  render: jwtRender(false),
};

/** Settings rbac.requireRbac: the RBAC filter on every HTTP listener denies what no rbac option allows. */
export const jwtFeatureRequiringRbac: Feature = {
  name: 'jwt',
  kinds: [],
  resolve: (ctx) => jwtBinding(ctx, true),
  render: jwtRender(true),
};
