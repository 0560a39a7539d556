// Listening on the transport a service is configured with (transport.ts).
import { listenH2 } from './server.js';
import type { H2Config, H2Server, H2ServerOptions } from './transport.js';

/** Listens on the configured transport. */
export function listenTransport(config: H2Config | undefined, host: string, port: number, options: H2ServerOptions): Promise<H2Server> {
  const merged: H2ServerOptions = {
    ...options,
    ...(config?.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: config.maxConcurrentStreams } : {}),
    ...(config?.limits ? { limits: { ...config.limits, ...options.limits } } : {}),
    ...(config?.tls ? { tls: config.tls } : {}),
  };
  // node:http2 loaded only when chosen
  if (config?.transport === 'node') return import('./node.js').then((m) => m.listenNodeH2(host, port, merged));
  return listenH2(host, port, merged);
}
