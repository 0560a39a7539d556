// The benchmark's upstream: a minimal Node HTTP server answering every request with the same small
// JSON body, keep-alive. Plain JS (no loader) so its CPU per request is the server's own.
// Prints {"port":N,"body":"..."} on stdout once listening (PORT=0 picks a free port).
import http from 'node:http';

const body = JSON.stringify({ ok: true, service: 'bench-upstream', items: [1, 2, 3] });
const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };

const server = http.createServer((req, res) => {
  // drain any request body, then answer
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port, body }) + '\n');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
