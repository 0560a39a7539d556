// The same GraphQL API in Apollo Server 5 (@apollo/server, its standalone node:http server with its
// defaults: document cache on; landing page off), with the same naive resolvers as the peer
// (./backend.mjs). POST /graphql. UPSTREAM_PORT: the backend.
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { resolvers, restClient, typeDefs } from './backend.mjs';

const backend = restClient(Number(process.env.UPSTREAM_PORT));
const server = new ApolloServer({ typeDefs, resolvers: resolvers(backend.getJson), plugins: [ApolloServerPluginLandingPageDisabled()] });
const { url } = await startStandaloneServer(server, { listen: { port: Number(process.env.PORT ?? 0), host: '127.0.0.1' } });
process.stdout.write(JSON.stringify({ port: Number(new URL(url).port) }) + '\n');
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    backend.close();
    server.stop().then(() => process.exit(0));
  });
}
