// The Legate proxy-wasm ABI layer for AssemblyScript (ABI 0.2.1). See docs/wasm.md.
export * from "./enums";
export * from "./memory";
export * from "./pairs";
export * from "./host";
export * from "./json";
export * from "./context";
