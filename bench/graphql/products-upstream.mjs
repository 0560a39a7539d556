// The GraphQL scenarios' REST backend: GET /api/v1/products -> [{id, title}] (PRODUCTS of them, default
// 5), GET /details/{id} -> {id, author, pages, year}, keep-alive. Plain JS (no loader) so its CPU per
// request is the server's own. It counts the calls it serves; GET /__stats answers the counts (not
// counted), so a scenario can show backend calls per GraphQL request.
// Prints {"port":N,"products":[...]} on stdout once listening (PORT=0 picks a free port).
import http from 'node:http';

const count = Math.max(1, Number(process.env.PRODUCTS ?? 5));
const products = Array.from({ length: count }, (_, i) => ({ id: i + 1, title: `Book ${i + 1}` }));
const details = new Map(
  products.map((p) => [String(p.id), JSON.stringify({ id: p.id, author: `Author ${p.id}`, pages: 100 + p.id, year: 1900 + p.id })]),
);
const list = JSON.stringify(products);
const stats = { list: 0, details: 0, other: 0 };

const server = http.createServer((req, res) => {
  req.resume();
  const send = (status, text) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  };
  const url = req.url ?? '/';
  if (url === '/api/v1/products') {
    stats.list++;
    return send(200, list);
  }
  if (url.startsWith('/details/')) {
    stats.details++;
    const d = details.get(url.slice('/details/'.length));
    return d ? send(200, d) : send(404, '{"error":"no such product"}');
  }
  if (url === '/__stats') return send(200, JSON.stringify(stats));
  stats.other++;
  return send(404, '{"error":"not found"}');
});
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port, products }) + '\n');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
