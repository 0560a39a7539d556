// The same GraphQL API in Mercurius (mercurius 16 on Fastify 5) with graphql-jit on (`jit: 1`: an operation
// is compiled on its second use, as Legate's engine does by default), its query cache on (the default), with
// the same naive resolvers as the peer (./backend.mjs). POST /graphql. UPSTREAM_PORT: the backend.
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { resolvers, restClient, typeDefs } from './backend.mjs';

const backend = restClient(Number(process.env.UPSTREAM_PORT));
const app = Fastify({ logger: false, keepAliveTimeout: 120_000 });
app.register(mercurius, { schema: typeDefs, resolvers: resolvers(backend.getJson), jit: 1, graphiql: false });
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(JSON.stringify({ port: app.server.address().port }) + '\n');
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    backend.close();
    app.close().then(() => process.exit(0));
  });
}
