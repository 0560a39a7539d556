// The health-check fleet's backends: one Node process listening on PORTS loopback ports (one per Upstream),
// answering every request 200 with an empty body, keep-alive. H2=1 serves HTTP/2 without TLS (prior knowledge,
// as Envoy's HTTP/2 health checker speaks it) instead of HTTP/1.1.
// Prints {"port":first,"ports":[...]} once every port listens. Plain JS (no loader).
import http from 'node:http';
import http2 from 'node:http2';

const count = Number(process.env.PORTS ?? 1000);
const h2 = process.env.H2 === '1';
const answer = (req, res) => {
  req.resume();
  res.writeHead(200, { 'content-length': '0' });
  res.end();
};
const servers = [];
for (let i = 0; i < count; i++) {
  const server = h2 ? http2.createServer(answer) : http.createServer(answer);
  if (!h2) {
    server.keepAliveTimeout = 600_000;
    server.headersTimeout = 605_000;
  }
  servers.push(new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server))));
}
const listening = await Promise.all(servers);
process.stdout.write(JSON.stringify({ port: listening[0].address().port, ports: listening.map((s) => s.address().port) }) + '\n');
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => process.exit(0));
}
