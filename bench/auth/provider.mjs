// The auth scenarios' OAuth2 provider: the example provider (examples/apps/oauth-provider.mjs, a real
// oidc-provider) in its own process, plus a request counter. The counter is a 'request' listener put in
// front of the provider's own on its HTTP server (http.createServer is wrapped before the provider makes
// its server): a path compare and an increment per request. The counts are served on a second port,
// so reading them costs the provider nothing.
// Prints {"port":N,"statsPort":M} on stdout once listening. Env: TOKEN_TTL_SECONDS (default 3600).
import http from 'node:http';

const stats = { introspections: 0, tokens: 0, other: 0 };
const createServer = http.createServer;
http.createServer = (...args) => {
  const server = createServer(...args);
  server.prependListener('request', (req) => {
    if (req.url === '/token/introspection') stats.introspections++;
    else if (req.url === '/token') stats.tokens++;
    else stats.other++;
  });
  return server;
};
const { startProvider } = await import('../../examples/apps/oauth-provider.mjs');
const provider = await startProvider({
  port: Number(process.env.PORT ?? 0),
  quiet: true,
  ttlSeconds: Number(process.env.TOKEN_TTL_SECONDS ?? 3600),
});
http.createServer = createServer;

const statsServer = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(stats));
});
statsServer.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: provider.port, statsPort: statsServer.address().port }) + '\n');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    statsServer.close();
    void provider.stop().then(() => process.exit(0));
  });
}
