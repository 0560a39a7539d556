// The seam between where resources come from and the controller: a ResourceSource watches its
// origin (a directory, a Kubernetes API server) and hands over complete snapshots of raw resources
// plus what failed to load. The controller translates each snapshot; it never knows which source.
import type { RawResource } from '../api/meta.js';
import type { ParseError } from './parse.js';

/** Something that could not be loaded: where (a file, an object) and why. */
export type LoadError = ParseError;

export interface SourceSnapshot {
  /** every resource the source holds now (a source that fails to read keeps the last good ones) */
  resources: RawResource[];
  errors: LoadError[];
}

export interface ResourceSource {
  /** for logs: `directory examples`, `cluster https://…` */
  readonly description: string;
  /**
   * Delivers a first snapshot, then one on every change, until `signal` aborts. Snapshots are whole
   * (not deltas); the source debounces bursts of changes.
   */
  watch(signal: AbortSignal, onSnapshot: (snapshot: SourceSnapshot) => void): void;
  /** What keeps the source from being current now (an unreachable API server, a failing watch). */
  problems?(): string[];
  /**
   * Before `watch`: the resources read before a restart (the last accepted versions, with their
   * origins). A source that keeps the last good resources of an origin that stops loading (the file
   * source) starts from these, so a file that does not load at start still serves what it held.
   */
  seed?(resources: readonly RawResource[]): void;
  /**
   * The namespaces whose resources the source reads now (Settings watchNamespaces or watchNamespaceSelectors, or the
   * command line's): [] for all, undefined for none. The validating webhook admits what is outside untouched.
   */
  scope?(): readonly string[] | undefined;
}
