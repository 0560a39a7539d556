// Facts about a whole proxy that stage 2 asks again and again (per listener, virtual host or route):
// computed once per proxy IR object, which stage 2 never changes, then looked up.
import type { ProxyIR, RouteIR, VirtualHostIR } from './ir.js';

/** `compute` memoised per proxy. */
export function perProxy<T>(compute: (proxy: ProxyIR) => T): (proxy: ProxyIR) => T {
  const memo = new WeakMap<ProxyIR, { value: T }>();
  return (proxy) => {
    let hit = memo.get(proxy);
    if (!hit) memo.set(proxy, (hit = { value: compute(proxy) }));
    return hit.value;
  };
}

/** Whether a virtual host of the proxy passes `test`. */
export function someVirtualHost(proxy: ProxyIR, test: (vh: VirtualHostIR) => boolean): boolean {
  return proxy.listeners.some((l) => l.virtualHosts.some(test));
}

/** Whether a route of the proxy passes `test`. */
export function someRoute(proxy: ProxyIR, test: (route: RouteIR) => boolean): boolean {
  return someVirtualHost(proxy, (vh) => vh.routes.some(test));
}
