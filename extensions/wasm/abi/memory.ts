// Memory shared with the host.
//
// Host -> module: every buffer the host hands back through a `ret_ptr_ptr` out-parameter was allocated
// by calling this module's `malloc` export (see exports.ts), i.e. `heap.alloc`: a raw TLSF block that
// the garbage collector neither sees nor frees. `HostBytes` holds one such block; `release()` frees
// it. Callers read the bytes in place (no copy into a managed string on the hot path) and release.
//
// Module -> host: the host copies inputs during the call, so managed buffers passed as pointer +
// length only need to stay alive for the call itself.

/** Out-parameter slots the host writes into: a pointer and a size (u32 each). Static data, so a host
 * call needs no allocation of its own. Only one host call is in flight at a time (single thread). */
export const RET_PTR: usize = memory.data(24, 8);
export const RET_SIZE: usize = RET_PTR + 4;
/** A third slot (u32), e.g. a metric id or a log level. */
export const RET_U32: usize = RET_PTR + 8;
/** A u64 slot (8-aligned), e.g. the current time. */
export const RET_U64: usize = RET_PTR + 16;

/** Clears the out-parameter slots before a call, so a failed call leaves nothing to free. */
// @ts-ignore: decorator
@inline export function clearRet(): void {
  store<u64>(RET_PTR, 0);
}

/** A block of host-written bytes owned by the module. Reuse one instance: `take()` releases whatever it
 * held before. */
export class HostBytes {
  ptr: usize = 0;
  len: usize = 0;

  /** Takes ownership of the block the host just wrote into the out-parameter slots. */
  take(): void {
    this.release();
    this.ptr = <usize>load<u32>(RET_PTR);
    this.len = <usize>load<u32>(RET_SIZE);
    // an empty result allocates nothing and comes back as 0/0
    if (this.ptr == 0) this.len = 0;
  }

  /** Frees the block (no-op when empty). */
  release(): void {
    if (this.ptr != 0) heap.free(this.ptr);
    this.ptr = 0;
    this.len = 0;
  }

  /** The bytes as a (managed) string, UTF-8 decoded. Not for the hot path. */
  toString(): string {
    return this.len == 0 ? "" : String.UTF8.decodeUnsafe(this.ptr, this.len);
  }

  // @ts-ignore: decorator
  @inline byteAt(i: usize): u32 {
    return <u32>load<u8>(this.ptr + i);
  }
}

/** UTF-8 bytes of a string, without a terminating NUL. */
export function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s);
}

/** True when the `len` bytes at `ptr` equal the ASCII string `lower` ignoring ASCII case (`lower` must be lower case). */
export function bytesEqualIgnoreCase(ptr: usize, len: usize, lower: string): bool {
  if (len != <usize>lower.length) return false;
  for (let i: usize = 0; i < len; i++) {
    let c = <u32>load<u8>(ptr + i);
    if (c >= 0x41 && c <= 0x5a) c |= 0x20;
    if (c != <u32>lower.charCodeAt(<i32>i)) return false;
  }
  return true;
}

/** True when the `len` bytes at `ptr` equal the ASCII string `s` exactly. */
export function bytesEqual(ptr: usize, len: usize, s: string): bool {
  if (len != <usize>s.length) return false;
  for (let i: usize = 0; i < len; i++) {
    if (<u32>load<u8>(ptr + i) != <u32>s.charCodeAt(<i32>i)) return false;
  }
  return true;
}

/** The bytes as a string, one character per byte (ISO-8859-1, as Node decodes header values). */
export function latin1String(ptr: usize, len: usize): string {
  let s = "";
  for (let i: usize = 0; i < len; i++) s += String.fromCharCode(<i32>load<u8>(ptr + i));
  return s;
}
