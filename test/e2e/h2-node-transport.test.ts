// The extauth, ratelimit and graphql end-to-end suites again with the extensions' gRPC served by node:http2
// (LEGATE_HTTP2_TRANSPORT=node, which legate run's components inherit; docs/extensions-http2.md): the same
// scenarios through a real Envoy, on the other transport. Each suite starts and stops its own gateway in turn.
import { describe } from 'vitest';

process.env['LEGATE_HTTP2_TRANSPORT'] = 'node';

describe('extauth on node:http2', async () => {
  await import('./extauth-service.test.js');
});

describe('ratelimit on node:http2', async () => {
  await import('./ratelimit.test.js');
});

describe('graphql on node:http2', async () => {
  await import('./graphql.test.js');
});
