// Stage 2 for stats: the virtual host's virtual clusters (`:path` by RE2 over the whole path, `:method`).
import type { HeaderMatcher } from '../../../../envoy/typed.js';
import type { RenderPlugin } from '../../feature.js';

export const statsRender: RenderPlugin = {
  patchVirtualHost(ir, vhost) {
    if (!ir.virtualClusters) return;
    vhost.virtual_clusters = ir.virtualClusters.map((vc) => {
      const headers: HeaderMatcher[] = [{ name: ':path', string_match: { safe_regex: { regex: vc.pattern } } }];
      if (vc.method) headers.push({ name: ':method', string_match: { exact: vc.method } });
      return { name: vc.name, headers };
    });
  },
  proxyContext: () => null,
};
