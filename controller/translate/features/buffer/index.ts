// Request buffering (Gloo's bufferPerRoute): Envoy's buffer filter sits on the HCM, disabled, whenever
// a virtual host, route or weighted destination of the proxy configures it; each of those enables it
// with its own limit (a larger body is answered 413) or turns it off where an outer level turned it on.
// Unlike Gloo, no gateway-level buffer is needed first: bufferPerRoute alone takes effect.
import type { Feature } from '../../feature.js';
import type { BufferIR } from '../../ir.js';
import { bufferRender } from './render.js';

export const bufferFeature: Feature = {
  name: 'buffer',
  kinds: [],
  resolve() {
    return {
      bindRoute(route, ir) {
        const own = route.options?.bufferPerRoute;
        if (own) ir.buffer = bufferIR(own);
        const destinations = route.routeAction?.multi?.destinations;
        if (!destinations || ir.action.type !== 'route') return;
        for (const cluster of ir.action.clusters) {
          const options = cluster.destination !== undefined ? destinations[cluster.destination]?.options : undefined;
          if (options?.bufferPerRoute) cluster.buffer = bufferIR(options.bufferPerRoute);
        }
      },
      bindVirtualHost(vs, ir) {
        const own = vs.spec.virtualHost.options?.bufferPerRoute;
        if (own) ir.buffer = bufferIR(own);
      },
    };
  },
  render: bufferRender,
};

function bufferIR(b: { disabled?: true; buffer?: { maxRequestBytes: number } }): BufferIR {
  return b.disabled || !b.buffer ? { disabled: true } : { maxRequestBytes: b.buffer.maxRequestBytes };
}
