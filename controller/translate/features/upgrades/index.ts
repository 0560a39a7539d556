// Protocol upgrades. Every HCM allows the WebSocket upgrade, as Gloo's does by default (unless the Gateway's
// httpConnectionManagerSettings.upgrades, rendered before this by the hcm feature, says otherwise); a route's
// `options.upgrades` turns WebSocket or CONNECT on or off for that route (Envoy RouteAction
// upgrade_configs). CONNECT is proxied to the upstream as a request (no connect_config), as in Gloo;
// a route matches CONNECT requests with a `connectMatcher` (matchers.ts).
import type { HttpConnectionManager, TypedConfig } from '../../../../envoy/typed.js';
import type { Feature } from '../../feature.js';
import type { UpgradeIR } from '../../ir.js';

const HCM_FILTER = 'envoy.filters.network.http_connection_manager';

export const upgradesFeature: Feature = {
  name: 'upgrades',
  kinds: [],
  resolve() {
    return {
      bindRoute(route, ir, site, sink) {
        const upgrades = route.options?.upgrades;
        if (!upgrades) return;
        const where = `${site.where}.options.upgrades`;
        if (ir.action.type !== 'route') {
          sink.problems.push({ code: 'InvalidSpec', message: `${where}: upgrades are only available on routes with a routeAction` });
          return;
        }
        const seen = new Set<string>();
        const bound: UpgradeIR[] = [];
        upgrades.forEach((u, i) => {
          const spec = u.websocket ?? u.connect;
          const upgrade: UpgradeIR = { type: u.websocket ? 'websocket' : 'CONNECT' };
          if (spec?.enabled !== undefined) upgrade.enabled = spec.enabled;
          if (seen.has(upgrade.type)) {
            const name = u.websocket ? 'websocket' : 'connect';
            sink.problems.push({ code: 'InvalidSpec', message: `${where}[${i}]: upgrade config ${name} is not unique` });
            return;
          }
          seen.add(upgrade.type);
          bound.push(upgrade);
        });
        if (bound.length) ir.upgrades = bound;
      },
    };
  },
  render: {
    patchListener(_ir, _listener, filters) {
      for (const f of filters) {
        if (f.name !== HCM_FILTER || !f.typed_config) continue;
        const hcm = f.typed_config as TypedConfig & HttpConnectionManager;
        const configs = (hcm.upgrade_configs ??= []);
        // a websocket entry already there (listener settings) says more than the default
        if (!configs.some((c) => c.upgrade_type?.toLowerCase() === 'websocket')) configs.push({ upgrade_type: 'websocket' });
      }
    },
    patchRoute(ir, route) {
      if (!ir.upgrades || !route.route) return;
      route.route.upgrade_configs = ir.upgrades.map((u) => ({
        upgrade_type: u.type,
        ...(u.enabled !== undefined ? { enabled: u.enabled } : {}),
      }));
    },
  },
};
