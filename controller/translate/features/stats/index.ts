// Virtual-host stats: `virtualHost.options.stats.virtualClusters` -> Envoy virtual clusters, requests
// counted apart under vhost.<virtual host>.vcluster.<name>.* (as Gloo's stats plugin: the whole path
// matches the RE2 pattern, and the method, when given, is one of Envoy's).
import type { Feature } from '../../feature.js';
import type { VirtualHostIR } from '../../ir.js';
import { re2Error } from '../../regex.js';
import { statsRender } from './render.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

export const statsFeature: Feature = {
  name: 'stats',
  kinds: [],
  resolve() {
    return {
      bindVirtualHost(vs, ir, sink) {
        const list = vs.spec.virtualHost.options?.stats?.virtualClusters;
        if (!list) return;
        const clusters: NonNullable<VirtualHostIR['virtualClusters']> = [];
        list.forEach((vc, i) => {
          const where = `virtualHost.options.stats.virtualClusters[${i}]`;
          const err = re2Error(vc.pattern);
          if (err) {
            sink.problems.push({ code: 'InvalidRegex', message: `${where}.pattern: invalid regex ${JSON.stringify(vc.pattern)}: ${err}` });
          }
          const method = vc.method ? vc.method.toUpperCase() : undefined;
          if (method !== undefined && !METHODS.has(method)) {
            sink.problems.push({
              code: 'InvalidSpec',
              message: `${where}.method: ${JSON.stringify(vc.method)} is not one of ${[...METHODS].join(', ')}`,
            });
          }
          // a dot would split the stat name (Gloo replaces it the same way)
          const name = vc.name.replaceAll('.', '_');
          if (name !== vc.name) sink.warnings.push({ code: 'InvalidSpec', message: `${where}.name: dots become underscores: ${name}` });
          clusters.push(method ? { name, pattern: vc.pattern, method } : { name, pattern: vc.pattern });
        });
        if (clusters.length) ir.virtualClusters = clusters;
      },
    };
  },
  render: statsRender,
};
