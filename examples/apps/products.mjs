// Example upstream for `make run`: a small REST API of books, used by the routing examples (and
// later by the GraphQL examples). GET /api/v1/products, GET /details/:id, GET /healthz.
import http from 'node:http';

const products = [
  { id: 1, title: 'The Comedy of Errors', descriptionHtml: 'Shakespeare’s shortest play.' },
  { id: 2, title: 'Sonnets', descriptionHtml: '154 poems.' },
  { id: 3, title: 'Hamlet', descriptionHtml: 'The Prince of Denmark.' },
];
const details = {
  1: { id: 1, author: 'William Shakespeare', year: 1595, type: 'paperback', pages: 200, publisher: 'PublisherA', language: 'English' },
  2: { id: 2, author: 'William Shakespeare', year: 1609, type: 'hardcover', pages: 154, publisher: 'PublisherB', language: 'English' },
  3: { id: 3, author: 'William Shakespeare', year: 1603, type: 'paperback', pages: 342, publisher: 'PublisherC', language: 'English' },
};

const port = Number(process.env.PORT ?? 9001);
const name = process.env.NAME ?? 'products';

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const send = (status, body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-served-by': name });
    res.end(text);
  };
  if (url.pathname === '/api/v1/products' || url.pathname === '/api/v1/products/') return send(200, products);
  const m = /^\/details\/(\d+)$/.exec(url.pathname);
  if (m) return details[m[1]] ? send(200, details[m[1]]) : send(404, { error: `no product ${m[1]}` });
  if (url.pathname === '/healthz') return send(200, { status: 'ok' });
  return send(404, { error: `no route for ${req.method} ${url.pathname}`, path: url.pathname });
});
server.listen(port, '127.0.0.1', () => console.log(JSON.stringify({ level: 'info', msg: 'products app listening', port })));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
