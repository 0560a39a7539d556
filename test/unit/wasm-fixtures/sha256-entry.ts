// Test-only entry: exposes bearer-check's Sha256 so test/unit/wasm-bearer-cache.test.ts can compare
// it with node:crypto.
import { Sha256 } from "../../../extensions/wasm/bearer-check/sha256";

// the `abort` alias of asconfig.json must resolve (the filters get it from abi/exports)
export { proxyAbort } from "../../../extensions/wasm/abi/abort";

const sha = new Sha256();

export function alloc(size: usize): usize {
  return heap.alloc(size);
}

/** Digest of `len` bytes at `ptr`, fed in `chunk`-byte pieces; returns the 32-byte digest's address. */
export function digest(ptr: usize, len: usize, chunk: usize): usize {
  for (let off: usize = 0; off < len; off += chunk) sha.update(ptr + off, min(chunk, len - off));
  return changetype<usize>(sha.finish());
}
