// Hot-path checks as proxy-wasm filters (bearer-check before ext_authz, graphql-check before ext_proc).
// Render only: the filters follow the bindings the extauth and graphql features put in the IR.
import type { Feature } from '../../feature.js';
import { wasmRender, type WasmOptions } from './render.js';

export { BEARER_CHECK, DEFAULT_WASM_OPTIONS, GRAPHQL_CHECK, VERIFIED_HEADER, edgeCacheSkip, wasmFilter } from './render.js';
export type { WasmCodeSource, WasmOptions } from './render.js';

export function wasmFeature(options: WasmOptions): Feature {
  return { name: 'wasm', kinds: [], render: wasmRender(options) };
}
