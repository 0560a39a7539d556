// The minimal graphql-js peer (./peer.mjs's server) with a per-request DataLoader in front of the details
// call, as a user who knows about N+1 would write it: author, pages and year of one product share one
// GET /details/{id}, so the nested query costs 1 + 5 backend calls, as in Legate (its per-request dedup).
// The backend has no batch endpoint, so the loader's batch function makes one call per distinct key.
import DataLoader from 'dataloader';
import { restClient } from './backend.mjs';
import { startPeer } from './peer.mjs';

const backend = restClient(Number(process.env.UPSTREAM_PORT));
startPeer({
  backend,
  resolvers: {
    Query: { productsForHome: () => backend.getJson('/api/v1/products') },
    Product: {
      author: (p, _args, ctx) => ctx.details.load(p.id).then((d) => d.author),
      pages: (p, _args, ctx) => ctx.details.load(p.id).then((d) => d.pages),
      year: (p, _args, ctx) => ctx.details.load(p.id).then((d) => d.year),
    },
  },
  context: () => ({ details: new DataLoader((ids) => Promise.all(ids.map((id) => backend.getJson(`/details/${id}`)))) }),
});
