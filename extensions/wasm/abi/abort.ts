// The `abort` the AssemblyScript standard library calls (bounds checks, out of memory, assertions in
// debug builds). asc would otherwise import `env.abort`, which Envoy does not provide, and loading would
// fail with "missing import". asconfig.json points `--use abort=` here: log through proxy_log (allowed in
// every phase, even inside the allocator), then trap. A trap makes Envoy mark the VM as failed; what
// happens to requests then is the plugin's failure_policy (default: fail closed with 503).
import { proxy_log } from "./imports";
import { LogLevel } from "./enums";

let aborting = false;

export function proxyAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    aborting = true; // building the message allocates; an abort inside it must not recurse
    const text = "wasm abort: " + (message !== null ? message : "(no message)") + " at " +
      (fileName !== null ? fileName : "?") + ":" + line.toString() + ":" + column.toString();
    const buf = String.UTF8.encode(text);
    proxy_log(LogLevel.Critical, changetype<usize>(buf), <usize>buf.byteLength);
  }
  unreachable();
}
