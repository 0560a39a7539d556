// The scenario contract. A scenario is an object in bench/scenarios/index.ts; it starts what it needs
// (through the context, so everything is stopped at the end), and returns either a load result
// (throughput, latency, CPU per request) or a list of named figures.
import type { LoadRequest, LoadStats, LoadTool } from './load.js';

export type { LoadRequest } from './load.js';

/**
 * proxy: Envoy. extension: Legate's graphql / extauth services. app: a server doing the gateway's job
 * in its place (the GraphQL peers). upstream: the backend. provider: the OAuth2 provider.
 * control-plane: Legate's controller (tracked, not in the server sum).
 */
export type ProcessRole = 'proxy' | 'extension' | 'app' | 'upstream' | 'provider' | 'control-plane';

/** A server-side process whose CPU time is charged to the requests of a load run. */
export interface MeasuredProcess {
  label: string;
  role: ProcessRole;
  pid: number;
}

export interface CpuShare {
  label: string;
  role: ProcessRole;
  cpuSeconds: number;
  usPerRequest: number;
}

export interface RoundStats {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
  /** CPU used by anything else on the machine during the round, % of one core */
  otherCpuPct: number;
  stealPct: number;
}

export interface LoadResult {
  kind: 'load';
  target: string;
  /** all rounds together: requests/duration summed, latency percentiles the median of the rounds' */
  stats: LoadStats;
  rounds: RoundStats[];
  /** (max - min) / mean of the rounds' req/s, in % */
  rpsSpreadPct: number;
  cpu: CpuShare[];
  /** µs of CPU per request, by role (control-plane excluded from `server`) */
  proxyUs: number | undefined;
  upstreamUs: number | undefined;
  extensionUs: number | undefined;
  appUs: number | undefined;
  providerUs: number | undefined;
  serverUs: number;
  /** the target's counters (see LoadTarget.counters) per measured request */
  perRequest: Record<string, number>;
  notes: string[];
}

export interface Figure {
  name: string;
  value: number | string;
  unit?: string;
  note?: string;
}

export interface FiguresResult {
  kind: 'figures';
  figures: Figure[];
  notes: string[];
}

export type ScenarioResult = LoadResult | FiguresResult;

export interface Settings {
  /** measured seconds of one round */
  durationS: number;
  /** warmup seconds before every round */
  warmupS: number;
  /** load scenarios are measured in this many interleaved rounds */
  rounds: number;
  /** a round during which other work used more than this % of a core is measured again (once) */
  quietPct: number;
  connections: number;
  threads: number;
  /** at most this many re-measured rounds in the whole run (keeps a busy machine from doubling it) */
  maxRepeats: number;
  /** taskset CPU lists; undefined = not pinned */
  loadCpus: string | undefined;
  serverCpus: string | undefined;
  scale: { virtualServices: number; routesPerVs: number; files: number; edits: number };
}

export interface Upstream {
  port: number;
  pid: number;
  /** the exact body it answers with */
  body: string;
}

/**
 * The request the load generator repeats (default: GET with no extra headers). With `variants`, it
 * cycles through them in order, each merged over the base headers and replacing the body if it has one
 * (e.g. one token per request from a pool).
 */

/** What a load scenario sets up: where to send the load and whose CPU to charge. */
export interface LoadTarget {
  port: number;
  path: string;
  host?: string;
  request?: LoadRequest;
  processes: MeasuredProcess[];
  /**
   * Counters of work done on the server side (e.g. backend calls), read before and after each measured
   * run; the result shows their growth per request.
   */
  counters?(): Promise<Record<string, number>>;
  /** lines for the notes under the tables */
  notes?: string[];
  /**
   * A rejection scenario: every response is expected to have this status (>= 400), so wrk's non-2xx/3xx
   * count is the expected outcome, not errors (the result notes how many there were; the scenario's
   * counters say who answered).
   */
  expectedStatus?: number;
  /**
   * wrk connections for this scenario instead of --connections: 1 measures the latency of a request that
   * never queues (what a check adds to it), where the default saturates the server core.
   */
  connections?: number;
  stop(): Promise<void>;
}

/** Thrown by a scenario's setup when it cannot run here (e.g. an optional package is missing). */
export class ScenarioSkipped extends Error {}

export interface BenchContext {
  settings: Settings;
  tool: LoadTool;
  /** scratch directory of this run (removed at the end) */
  workDir: string;
  /** the repository root */
  root: string;
  log(msg: string): void;
  /** The shared upstream (one Node process for every scenario), started on first use. */
  upstream(): Promise<Upstream>;
  /** Values a scenario leaves for later ones (e.g. Legate's Envoy concurrency). */
  facts: Map<string, unknown>;
  /** Stops `fn`'s resources at the end of the run even if the scenario forgets (or fails). */
  defer(fn: () => Promise<void> | void): void;
}

interface ScenarioBase {
  name: string;
  /** one line for the docs and the log */
  description: string;
}

/**
 * A load scenario only sets its servers up. The runner sets up every selected load scenario, then
 * measures them in interleaved rounds (A B C A B C ...) so drift on a shared machine hits all of
 * them alike, then stops them all.
 */
export interface LoadScenario extends ScenarioBase {
  kind: 'load';
  /** other scenarios (besides `direct`) to print ratios against */
  compareTo?: string[];
  /** aims against another scenario (named in compareTo), shown as met or not */
  aims?: Record<string, Aim>;
  /**
   * Scenarios of the same group (listed next to each other) are measured at the same time, one wrk
   * each, started and stopped together: whatever else runs on the machine then hits them alike (two
   * identical sides differed by ~4 µs of Envoy CPU per request, ~12 µs in all, with other work taking
   * half the server core). Their processes must be
   * distinct (CPU is charged per process) and they share the server core, so each one's req/s is about
   * half what it would be alone: compare them with each other, not with the others.
   */
  group?: string;
  setup(ctx: BenchContext): Promise<LoadTarget>;
}

/** Any other measurement: runs alone (after the load scenarios) and returns named figures. */
export interface FiguresScenario extends ScenarioBase {
  kind: 'figures';
  run(ctx: BenchContext): Promise<FiguresResult>;
}

export type Scenario = LoadScenario | FiguresScenario;

/**
 * An aim of a scenario against another: a number is the minimum req/s ratio; the object form can also
 * bound the p50 latency this scenario adds (µs) and ask for the req/s bound to be checked on the
 * CPU-per-request ratio too (on one core, throughput is ~ 1 / server CPU per request; CPU per request
 * moves less than req/s when other work shares the machine, but it still rises when the rate falls).
 */
export type Aim =
  | number
  | {
      minRps?: number;
      maxAddedP50Us?: number;
      alsoByCpu?: boolean;
      /**
       * Also judge the aim on the cost of the difference measured alone: [with, without] are two
       * scenarios isolating it (same process, same request, the one thing on or off); their server CPU
       * difference is added to the second scenario of the comparison. The req/s bound is checked as
       * second CPU / (second CPU + that difference), the p50 bound against the difference itself (one
       * request on one core takes at least its CPU time longer).
       */
      isolated?: [string, string];
    };

export interface ScenarioRecord {
  name: string;
  description: string;
  compareTo: string[];
  aims?: Record<string, Aim>;
  ok: boolean;
  /** set when the scenario was skipped (not a failure): why */
  skipped?: string;
  error?: string;
  seconds: number;
  result?: ScenarioResult;
}
