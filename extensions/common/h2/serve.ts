// Listening and stopping, shared by both transports (server.ts on node:net, node.ts on node:http2).
import type { AddressInfo, Server } from 'node:net';
import type { H2Server, H2ServerOptions } from './transport.js';

/** What a transport does to its open connections when stopping. */
export interface OpenConnections {
  /** ask each to finish (GOAWAY): in-flight streams complete */
  shutdown(): void;
  /** what is still open when the grace time is over */
  destroy(): void;
}

/** Listens; stop() shuts connections down gracefully and destroys what is left after `graceMs`. */
export function serve(server: Server, host: string, port: number, options: H2ServerOptions, open: OpenConnections): Promise<H2Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.on('error', (err) => options.onError('http2 server', err));
      resolve({
        port: (server.address() as AddressInfo).port,
        stop: (graceMs = 2000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => open.destroy(), graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            open.shutdown();
          }),
      });
    });
  });
}
