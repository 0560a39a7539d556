// The module's side of proxy-wasm ABI 0.2.1. A filter's entry file re-exports the subset it needs:
// Envoy skips a callback the module does not export (e.g. no body callbacks for a headers-only filter).
import { Action } from "./enums";
// the `abort` asconfig.json aliases (--use abort=…/proxyAbort) must be part of the program
export { proxyAbort } from "./abort";
import { createRootContext, createStreamContext, rootContexts, streamContexts } from "./context";

/** ABI version marker: the host finds it among the exports and never calls it. */
export function proxy_abi_version_0_2_1(): void {}

/** The allocator the host uses for every buffer it hands to the module (Envoy looks up `malloc` before
 * `proxy_on_memory_allocate`; only this one is exported). A raw TLSF block outside the GC, freed by the
 * module with heap.free (HostBytes.release). TLSF aborts (traps) rather than returning 0 when out of memory. */
export function malloc(size: usize): usize {
  return heap.alloc(size);
}

export function proxy_on_context_create(context_id: u32, parent_context_id: u32): void {
  if (parent_context_id == 0) createRootContext(context_id);
  else createStreamContext(context_id, parent_context_id);
}

export function proxy_on_vm_start(root_context_id: u32, vm_configuration_size: u32): bool {
  if (!rootContexts.has(root_context_id)) return false;
  return rootContexts.get(root_context_id).onVmStart(vm_configuration_size);
}

export function proxy_on_configure(root_context_id: u32, plugin_configuration_size: u32): bool {
  if (!rootContexts.has(root_context_id)) return false;
  return rootContexts.get(root_context_id).onConfigure(plugin_configuration_size);
}

export function proxy_on_request_headers(context_id: u32, num_headers: u32, end_of_stream: u32): u32 {
  if (!streamContexts.has(context_id)) return Action.Continue;
  return streamContexts.get(context_id).onRequestHeaders(num_headers, end_of_stream != 0);
}

export function proxy_on_request_body(context_id: u32, body_size: u32, end_of_stream: u32): u32 {
  if (!streamContexts.has(context_id)) return Action.Continue;
  return streamContexts.get(context_id).onRequestBody(body_size, end_of_stream != 0);
}

export function proxy_on_request_trailers(context_id: u32, num_trailers: u32): u32 {
  if (!streamContexts.has(context_id)) return Action.Continue;
  return streamContexts.get(context_id).onRequestTrailers(num_trailers);
}

export function proxy_on_response_headers(context_id: u32, num_headers: u32, end_of_stream: u32): u32 {
  if (!streamContexts.has(context_id)) return Action.Continue;
  return streamContexts.get(context_id).onResponseHeaders(num_headers, end_of_stream != 0);
}

export function proxy_on_done(context_id: u32): bool {
  if (streamContexts.has(context_id)) return streamContexts.get(context_id).onDone();
  if (rootContexts.has(context_id)) return rootContexts.get(context_id).onDone();
  return true;
}

export function proxy_on_delete(context_id: u32): void {
  if (streamContexts.has(context_id)) {
    streamContexts.get(context_id).onDelete();
    streamContexts.delete(context_id);
  } else if (rootContexts.has(context_id)) {
    rootContexts.get(context_id).onDelete();
    rootContexts.delete(context_id);
  }
}
