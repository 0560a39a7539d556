// What the GraphQL peers share: the schema and the naive resolvers a user would write, calling the
// products REST backend over a keep-alive http.Agent, one call per resolved field (no dedup: the nested
// query's author, pages and year each fetch /details/{id}).
import http from 'node:http';

export const typeDefs = /* GraphQL */ `
  type Query {
    productsForHome: [Product]
  }
  type Product {
    id: Int
    title: String
    author: String
    pages: Int
    year: Int
  }
`;

/** GET a JSON document from the backend on 127.0.0.1:port, keep-alive. */
export function restClient(port) {
  const agent = new http.Agent({ keepAlive: true });
  const getJson = (path) =>
    new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path, agent, headers: { accept: 'application/json' } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      });
      req.on('error', reject);
    });
  return { getJson, close: () => agent.destroy() };
}

/** Resolver map (graphql-tools shape): Type -> field -> resolve(parent, args, context). */
export function resolvers(getJson) {
  const detail = (field) => (product) => getJson(`/details/${product.id}`).then((d) => d[field]);
  return {
    Query: { productsForHome: () => getJson('/api/v1/products') },
    Product: { author: detail('author'), pages: detail('pages'), year: detail('year') },
  };
}

/** Reads a request body (at most 1 MiB). */
export function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > 1 << 20) req.destroy(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Prints the ready line and stops on SIGINT/SIGTERM. */
export function serve(server, onStop = () => {}) {
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 125_000;
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
  });
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      onStop();
      server.close(() => process.exit(0));
      server.closeAllConnections();
    });
  }
}
