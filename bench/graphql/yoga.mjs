// The same GraphQL API in GraphQL Yoga (graphql-yoga 5, its defaults: parse and validation caches on),
// with the same naive resolvers as the peer (./backend.mjs). POST /graphql. UPSTREAM_PORT: the backend.
import http from 'node:http';
import { createSchema, createYoga } from 'graphql-yoga';
import { resolvers, restClient, serve, typeDefs } from './backend.mjs';

const backend = restClient(Number(process.env.UPSTREAM_PORT));
const yoga = createYoga({
  schema: createSchema({ typeDefs, resolvers: resolvers(backend.getJson) }),
  graphiql: false,
  landingPage: false,
  logging: false,
});
serve(http.createServer(yoga), () => backend.close());
