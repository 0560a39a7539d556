// The GraphQL explorer: GraphiQL (React) in a chunk of its own, loaded when the page opens, pointed at the gateway.
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { createElement } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import 'graphiql/style.css';

// Monaco's editor, JSON and GraphQL language workers, built next to this chunk (scripts/build.mjs)
(globalThis as { MonacoEnvironment?: unknown }).MonacoEnvironment = {
  getWorker(_id: string, label: string): Worker {
    const file = label === 'json' ? 'json' : label === 'graphql' ? 'graphql' : 'editor';
    return new Worker(new URL(`workers/${file}.worker.js`, document.baseURI), { type: 'module' });
  },
};

/** Renders GraphiQL into `el` for the GraphQL endpoint `url`; returns how to take it down. */
export function mountGraphiQL(el: HTMLElement, url: string, query: string): () => void {
  const root: Root = createRoot(el);
  const fetcher = createGraphiQLFetcher({ url });
  root.render(createElement(GraphiQL, { fetcher, defaultQuery: query, initialQuery: query }));
  return () => root.unmount();
}
