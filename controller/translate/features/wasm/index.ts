// proxy-wasm filters. Legate's own hot-path checks (bearer-check, graphql-check) follow the bindings the extauth and
// graphql features put in the IR; a Gateway's `httpGateway.options.wasm` adds the user's own filters to its listener,
// each module pinned by its sha256.
import type { Feature } from '../../feature.js';
import { bindUserWasm } from './bind.js';
import { wasmRender, type WasmOptions } from './render.js';

export { BEARER_CHECK, DEFAULT_WASM_OPTIONS, GRAPHQL_CHECK, VERIFIED_HEADER, edgeCacheSkip, wasmFilter } from './render.js';
export type { WasmCodeSource, WasmOptions } from './render.js';

export function wasmFeature(options: WasmOptions): Feature {
  return {
    name: 'wasm',
    kinds: [],
    resolve() {
      return {
        bindGateway(gw, ir, sink) {
          const filters = bindUserWasm(gw, options.moduleSha256, sink);
          if (filters) ir.wasm = filters;
        },
      };
    },
    render: wasmRender(options),
  };
}
