// The scenario contract. A scenario is an object in bench/scenarios/index.ts; it starts what it needs
// (through the context, so everything is stopped at the end), and returns either a load result
// (throughput, latency, CPU per request) or a list of named figures.
import type { LoadStats, LoadTool } from './load.js';

export type ProcessRole = 'proxy' | 'upstream' | 'extension' | 'control-plane';

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
  serverUs: number;
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

/** What a load scenario sets up: where to send the load and whose CPU to charge. */
export interface LoadTarget {
  port: number;
  path: string;
  host?: string;
  processes: MeasuredProcess[];
  /** lines for the notes under the tables */
  notes?: string[];
  stop(): Promise<void>;
}

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
  setup(ctx: BenchContext): Promise<LoadTarget>;
}

/** Any other measurement: runs alone (after the load scenarios) and returns named figures. */
export interface FiguresScenario extends ScenarioBase {
  kind: 'figures';
  run(ctx: BenchContext): Promise<FiguresResult>;
}

export type Scenario = LoadScenario | FiguresScenario;

export interface ScenarioRecord {
  name: string;
  description: string;
  compareTo: string[];
  ok: boolean;
  error?: string;
  seconds: number;
  result?: ScenarioResult;
}
