// The GraphQL peer: the minimal graphql-js server a user would write instead of the gateway. node:http,
// graphql 16's parse/validate/execute, the naive resolvers of ./backend.mjs (one backend call per
// field, no dedup), and a cache of parsed and validated documents keyed by the query text.
// POST /graphql {query, variables, operationName} -> {data}. UPSTREAM_PORT: the products backend.
// startPeer() is the same server with other resolvers and a per-request context (./dataloader.mjs).
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { buildSchema, execute, parse, validate } from 'graphql';
import { readBody, resolvers as naiveResolvers, restClient, serve, typeDefs } from './backend.mjs';

/** Starts the server: `resolvers` (Type -> field -> resolve), `context()` per request (default none). */
export function startPeer({ backend, resolvers, context = () => undefined }) {
  const schema = buildSchema(typeDefs);
  for (const [type, fields] of Object.entries(resolvers)) {
    const defs = schema.getType(type).getFields();
    for (const [field, resolve] of Object.entries(fields)) defs[field].resolve = resolve;
  }

  const documents = new Map(); // query text -> { document } | { errors }
  function prepare(query) {
    let hit = documents.get(query);
    if (hit) return hit;
    try {
      const document = parse(query);
      const errors = validate(schema, document);
      hit = errors.length ? { errors } : { document };
    } catch (err) {
      hit = { errors: [err] };
    }
    if (documents.size >= 1000) documents.clear();
    documents.set(query, hit);
    return hit;
  }

  const send = (res, status, body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  };
  const errorJson = (e) => (typeof e.toJSON === 'function' ? e.toJSON() : { message: String(e.message ?? e) });

  const server = http.createServer(async (req, res) => {
    try {
      if (req.method !== 'POST' || !req.url?.startsWith('/graphql')) return send(res, 404, { errors: [{ message: 'POST /graphql' }] });
      let params;
      try {
        params = JSON.parse(await readBody(req));
      } catch {
        return send(res, 400, { errors: [{ message: 'malformed JSON body' }] });
      }
      if (typeof params?.query !== 'string') return send(res, 400, { errors: [{ message: 'missing query' }] });
      const prepared = prepare(params.query);
      if (prepared.errors) return send(res, 400, { errors: prepared.errors.map(errorJson) });
      const result = await execute({
        schema,
        document: prepared.document,
        variableValues: params.variables,
        operationName: params.operationName,
        contextValue: context(),
      });
      send(res, 200, result.errors ? { ...result, errors: result.errors.map(errorJson) } : result);
    } catch (err) {
      send(res, 500, { errors: [{ message: String(err?.message ?? err) }] });
    }
  });
  serve(server, () => backend.close());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = restClient(Number(process.env.UPSTREAM_PORT));
  startPeer({ backend, resolvers: naiveResolvers(backend.getJson) });
}
