// Delegation: the one step that turns a VirtualService's tree of RouteTables into a flat list of
// routes, before the features run. A route with a delegateAction yields no route of its own: it
// stands for the routes of the tables it picks (by ref or selector, ordered by weight), merged with
// it (matchers, options) and checked against it, recursively. Each flattened route keeps its site:
// the RouteTable holding it, whose namespace its references resolve in and on which its problems are
// reported. Then the features' routeAction/bindRoute run on it as on any route (translate.ts).
//
// Per translation, resolveRouteTables decides once which version of each RouteTable serves: each is
// checked on its own (its routes bound as if a virtual service of its own held them; keep last good
// on problems), then delegation cycles are found and every table in one is rejected (or serves its
// last accepted version when that breaks the cycle). Per VirtualService, flattenRoutes walks the tree;
// a table whose routes do not fit a parent (Gloo's prefix rule) is rejected there and, if it has
// one, its last accepted version serves under that parent instead.
//
// With the previous run's memo, an edit costs what it changed, not the number of tables: the tables it
// replaced are checked and patched into the previous run's maps, and only the VirtualServices whose
// trace names a changed table are flattened again (translate.ts).
import type { LegateResource, RouteTable, VirtualService } from '../../api/resources.js';
import { keyOf } from '../../api/resources.js';
import type { DelegateAction, Route, RouteOptions } from '../../api/routes.js';
import type { Attempt, BindSink, Problem, RouteSite } from '../feature.js';
import { nsName, sourceOf } from '../names.js';
import { Reporter, type Report } from '../reporter.js';
import { delegateMatcher, mergeWithParent, sortByPath, type ParentRoute } from './merge.js';
import { PatchedMap } from './patched-map.js';
import { delegateRef, selects, selectTables, tableIndex, type TableIndex } from './select.js';

/** Translates one (flattened) route; problems and warnings go to `sink`. The core's route translation. */
export type TranslateRoute<T> = (route: Route, site: RouteSite, name: string, sink: BindSink) => T | undefined;

/** How the core serves a resource with keep last good (translate.ts withFallback), reporting to `reporter`. */
export type Serve = (rt: RouteTable, attempt: (r: RouteTable) => Attempt<true>, reporter: Reporter) => RouteTable | undefined;

export interface RouteTablesInput {
  tables: readonly RouteTable[];
  lastAccepted: ReadonlyMap<string, LegateResource>;
  serve: Serve;
  /** Reports on a RouteTable outside `serve`. */
  report(report: Report): void;
  check: (rt: RouteTable) => Attempt<true>;
  /** The previous run's memo, when nothing the checks read (other kinds, options) changed since. */
  memo: RouteTablesMemo | undefined;
}

/** Which version of each RouteTable serves, for this translation. */
export interface RouteTables {
  readonly index: TableIndex;
  /** a current table's keys (the same strings run after run, so maps keyed by them look them up fast) */
  keysOf(rt: RouteTable): TableKeys;
  /** by nsName: the version that serves (absent: rejected, or in a cycle) */
  readonly served: ReadonlyMap<string, RouteTable>;
  readonly lastAccepted: ReadonlyMap<string, LegateResource>;
  /** nsNames whose current, served or last accepted version differs from the memo's run (all, without a memo) */
  readonly changed: ReadonlySet<string> | undefined;
  /** of those, the ones where only the last accepted version changed */
  readonly lastOnly: ReadonlySet<string>;
  readonly memo: RouteTablesMemo;
}

export interface RouteTablesMemo {
  /** the tables as given, and their index */
  readonly tables: readonly RouteTable[];
  readonly index: TableIndex;
  /** each table's check, by nsName */
  readonly checked: ReadonlyMap<string, CheckMemo>;
  /** each table's state, by nsName */
  readonly states: ReadonlyMap<string, TableState>;
  /** what each version's delegateActions select, while no table appears, goes or changes its labels */
  readonly targets: TargetsMemo;
  readonly keys: KeysMemo;
  /** the versions that passed their checks, before cycles were looked for; and whether there were none */
  readonly checkedChosen: ReadonlyMap<string, RouteTable>;
  readonly acyclic: boolean;
  /** every table's check reports, in the index's order */
  readonly checkReports: readonly Report[];
  /** what the tables that serve delegate to and cannot (reportTargets) */
  readonly targetReports?: readonly Report[];
  /**
   * The map of last accepted versions this run's translation gave back, and the tables (nsNames) whose
   * entry there differs from the one this run read: when it comes back unchanged as the next run's,
   * only those and the tables replaced can see another last accepted version.
   */
  readonly accepted?: ReadonlyMap<string, LegateResource>;
  readonly moved?: readonly string[];
}

export interface TableKeys {
  /** nsName */
  key: string;
  /** keyOf (last accepted versions are kept by it) */
  resource: string;
}
type KeysMemo = WeakMap<RouteTable, TableKeys>;

type Targets = { where: string; keys: string[]; warning?: string }[];
type TargetsMemo = WeakMap<RouteTable, Targets>;

interface CheckMemo {
  readonly rt: RouteTable;
  readonly last: LegateResource | undefined;
  readonly served: RouteTable | undefined;
  readonly reports: readonly Report[];
}

interface TableState {
  readonly current: RouteTable;
  readonly served: RouteTable | undefined;
  readonly last: LegateResource | undefined;
}

export function resolveRouteTables(input: RouteTablesInput): RouteTables {
  const { tables, lastAccepted } = input;
  const before = input.memo;
  const keys: KeysMemo = before?.keys ?? new WeakMap();
  const keysOf = (rt: RouteTable): TableKeys => {
    let k = keys.get(rt);
    if (!k) keys.set(rt, (k = { key: nsName(rt.metadata.namespace, rt.metadata.name), resource: keyOf(rt) }));
    return k;
  };
  const { index, replaced } = indexOf(tables, before, keysOf);
  // an edit that replaced versions only needs those checked for new labels
  const selectable =
    before !== undefined && (replaced ? replaced.every(([old, rt]) => sameLabels(old, rt)) : sameSelectable(before.states, index));
  const targets: TargetsMemo = selectable ? before.targets : new WeakMap();
  const targetsOf = (rt: RouteTable): Targets => {
    let t = targets.get(rt);
    if (!t) {
      t = delegations(rt).map(({ action, where }) => ({ where, ...selectTables(action, rt.metadata.namespace, index) }));
      targets.set(rt, t);
    }
    return t;
  };
  // An edit that only replaced versions (or changed what was last accepted) touches the entries of the
  // tables it changed: the maps of the previous run are patched (PatchedMap), not built again.
  const patching = before !== undefined && replaced !== undefined;
  const touched: string[] = [];
  const check = (rt: RouteTable, key: string, resource: string): CheckMemo => {
    const last = lastAccepted.get(resource);
    const memo = before?.checked.get(key);
    if (memo && memo.rt === rt) {
      if (memo.last === last) return memo;
      // the last accepted version serves only when this one fails its check (as when a table is first accepted)
      if (memo.served === rt) return { ...memo, last };
    }
    const reporter = new Reporter();
    const served = input.serve(rt, (v) => input.check(v), reporter);
    return { rt, last, served, reports: reporter.reports };
  };
  const moved = patching && before.accepted !== undefined && before.accepted === lastAccepted ? before.moved : undefined;
  let checked: ReadonlyMap<string, CheckMemo>;
  let checkReports: readonly Report[];
  if (patching) {
    const changes = new Map<string, CheckMemo>();
    const recheck = (rt: RouteTable, key: string, resource: string): CheckMemo => {
      const memo = check(rt, key, resource);
      if (memo !== before.checked.get(key)) {
        changes.set(key, memo);
        touched.push(key);
      }
      return memo;
    };
    if (moved) {
      const candidates = new Set(moved);
      for (const [, rt] of replaced) candidates.add(keysOf(rt).key);
      for (const key of candidates) {
        const rt = index.byKey.get(key);
        if (rt) recheck(rt, key, keysOf(rt).resource);
      }
    } else {
      for (const rt of index.ordered) {
        const { key, resource } = keysOf(rt);
        recheck(rt, key, resource);
      }
    }
    checked = PatchedMap.of(before.checked, changes);
    const reporting = touched.some((key) => before.checked.get(key)!.reports.length || changes.get(key)!.reports.length);
    checkReports = reporting ? index.ordered.flatMap((rt) => checked.get(keysOf(rt).key)!.reports) : before.checkReports;
  } else {
    const all = new Map<string, CheckMemo>();
    const reports: Report[] = [];
    for (const rt of index.ordered) {
      const { key, resource } = keysOf(rt);
      const memo = check(rt, key, resource);
      all.set(key, memo);
      reports.push(...memo.reports);
    }
    checked = all;
    checkReports = reports;
  }
  for (const r of checkReports) input.report(r);
  // the tables that serve, in the index's order (the order their targets are reported in)
  let checkedChosen: ReadonlyMap<string, RouteTable>;
  const sameServing = patching && touched.every((key) => before.checkedChosen.has(key) === (checked.get(key)!.served !== undefined));
  if (sameServing) {
    const changes = new Map<string, RouteTable>();
    for (const key of touched) {
      const served = checked.get(key)!.served!;
      if (before.checkedChosen.get(key) !== served) changes.set(key, served);
    }
    checkedChosen = PatchedMap.of(before.checkedChosen, changes);
  } else {
    const all = new Map<string, RouteTable>();
    for (const rt of index.ordered) {
      const { key } = keysOf(rt);
      const served = checked.get(key)!.served;
      if (served) all.set(key, served);
    }
    checkedChosen = all;
  }
  // Without a cycle last time, tables picking the same tables as then, and the versions that changed
  // delegating nowhere, there is none now either: the walk over every table is skipped.
  const noNewEdge = ([key, rt]: [string, RouteTable]): boolean =>
    before!.checkedChosen.get(key) === rt || targetsOf(rt).every((t) => t.keys.length === 0);
  const stillAcyclic =
    selectable &&
    before.acyclic &&
    before.checkedChosen.size === checkedChosen.size &&
    // patching, only the tables touched may serve another version than then
    (patching
      ? touched.every((key) => !checkedChosen.has(key) || noNewEdge([key, checkedChosen.get(key)!]))
      : [...checkedChosen].every(noNewEdge));
  // breaking cycles changes what serves: on a copy
  const chosen: ReadonlyMap<string, RouteTable> = stillAcyclic ? checkedChosen : new Map(checkedChosen);
  const acyclic = stillAcyclic || breakCycles(chosen as Map<string, RouteTable>, targetsOf, lastAccepted, input);
  // the same tables serving, none of those touched delegating then or now: the same reports as then
  const delegatesNowhere = (rt: RouteTable | undefined): boolean => !rt || targetsOf(rt).length === 0;
  const sameTargets =
    sameServing &&
    stillAcyclic &&
    before.targetReports !== undefined &&
    touched.every((key) => delegatesNowhere(before.checkedChosen.get(key)) && delegatesNowhere(chosen.get(key)));
  const targetReports = sameTargets ? before.targetReports! : reportTargets(chosen, targetsOf);
  for (const r of targetReports) input.report(r);

  let states: ReadonlyMap<string, TableState>;
  const changed = before ? new Set<string>() : undefined;
  const lastOnly = new Set<string>();
  const stateOf = (rt: RouteTable, key: string, resource: string): TableState => {
    const served = chosen.get(key);
    const last = lastAccepted.get(resource);
    const b = before?.states.get(key);
    if (b && b.current === rt && b.served === served) {
      if (b.last === last) return b;
      lastOnly.add(key);
    }
    changed?.add(key);
    return { current: rt, served, last };
  };
  if (patching && stillAcyclic) {
    // what serves changed only for the tables touched (no cycle then or now)
    const changes = new Map<string, TableState>();
    for (const key of touched) {
      const rt = index.byKey.get(key)!;
      const state = stateOf(rt, key, keysOf(rt).resource);
      if (state !== before.states.get(key)) changes.set(key, state);
    }
    states = PatchedMap.of(before.states, changes);
  } else {
    const all = new Map<string, TableState>();
    for (const rt of index.ordered) {
      const { key, resource } = keysOf(rt);
      all.set(key, stateOf(rt, key, resource));
    }
    if (before && changed) for (const key of before.states.keys()) if (!all.has(key)) changed.add(key);
    states = all;
  }
  const memo: RouteTablesMemo = { tables, index, checked, states, targets, keys, checkedChosen, acyclic, checkReports, targetReports };
  return { index, keysOf, served: chosen, lastAccepted, changed, lastOnly, memo };
}

/**
 * The index of `tables`: the previous run's, patched, when the same tables come in the same order (an edit
 * replaced versions; `replaced` lists them, old and new), or built anew (then `replaced` is undefined).
 */
function indexOf(
  tables: readonly RouteTable[],
  before: RouteTablesMemo | undefined,
  keysOf: (rt: RouteTable) => TableKeys,
): { index: TableIndex; replaced?: [RouteTable, RouteTable][] } {
  // with two tables of one name, which one the index keeps depends on the order: built anew
  if (!before || before.tables.length !== tables.length || before.index.byKey.size !== tables.length) return { index: tableIndex(tables) };
  const previous = before.tables;
  const replaced: [RouteTable, RouteTable][] = [];
  for (let i = 0; i < tables.length; i++) {
    const [old, rt] = [previous[i]!, tables[i]!];
    if (old === rt) continue;
    if (keysOf(old).key !== keysOf(rt).key) return { index: tableIndex(tables) };
    replaced.push([old, rt]);
  }
  if (!replaced.length) return { index: before.index, replaced };
  const changes = new Map<string, RouteTable>();
  const swap = new Map<RouteTable, RouteTable>();
  for (const [old, rt] of replaced) {
    changes.set(keysOf(rt).key, rt);
    swap.set(old, rt);
  }
  const byKey = PatchedMap.of(before.index.byKey, changes);
  return { index: { byKey, ordered: before.index.ordered.map((rt) => swap.get(rt) ?? rt) }, replaced };
}

/** Whether selections made against the tables of `before` hold for `index`: the same tables, with the same labels. */
function sameSelectable(before: ReadonlyMap<string, TableState>, index: TableIndex): boolean {
  if (before.size !== index.byKey.size) return false;
  for (const [key, rt] of index.byKey) {
    const b = before.get(key)?.current;
    if (!b) return false;
    if (b !== rt && !sameLabels(b, rt)) return false;
  }
  return true;
}

function sameLabels(a: RouteTable, b: RouteTable): boolean {
  return a === b || JSON.stringify(a.metadata.labels ?? {}) === JSON.stringify(b.metadata.labels ?? {});
}

/** The delegateActions of a version, with where they are. */
function delegations(rt: RouteTable): { action: DelegateAction; where: string }[] {
  const out: { action: DelegateAction; where: string }[] = [];
  (rt.spec.routes ?? []).forEach((r, j) => {
    if (r.delegateAction) out.push({ action: r.delegateAction, where: `routes[${j}].delegateAction` });
  });
  return out;
}

/**
 * Every table on a delegation cycle is rejected; one whose last accepted version differs serves that
 * instead (which may break the cycle for the others), the rest serve nothing. Returns whether there was none.
 */
function breakCycles(
  chosen: Map<string, RouteTable>,
  targetsOf: (rt: RouteTable) => Targets,
  lastAccepted: RouteTablesInput['lastAccepted'],
  input: RouteTablesInput,
): boolean {
  const reported = new Set<string>();
  const fellBack = new Set<string>();
  for (;;) {
    const edges = new Map<string, string[]>();
    for (const [key, rt] of chosen) {
      edges.set(
        key,
        targetsOf(rt).flatMap((t) => t.keys.filter((k) => chosen.has(k))),
      );
    }
    const cycles = cyclesThrough(edges);
    if (!cycles.size) return reported.size === 0;
    for (const [key, cycle] of cycles) {
      if (reported.has(key)) continue;
      reported.add(key);
      const path = cycle.map((k) => `[${k.replace('/', '.')}]`).join(' -> ');
      const message = `invalid route: delegation cycle detected: ${path}`;
      input.report({ resource: sourceOf(chosen.get(key)!), severity: 'error', code: 'DelegationCycle', message });
    }
    // tables whose last accepted version may break the cycle go back to it first; the others then
    // serve again if that was enough, and otherwise serve nothing
    const back = [...cycles.keys()].flatMap((key) => {
      const rt = chosen.get(key)!;
      const last = lastAccepted.get(keyOf(rt)) as RouteTable | undefined;
      const usable = !fellBack.has(key) && last && !sameSpec(last, rt) && input.check(last).problems.length === 0;
      return usable ? [{ key, rt, last }] : [];
    });
    for (const { key, rt, last } of back) {
      fellBack.add(key);
      chosen.set(key, last);
      const message = 'serving the last accepted version until this one is fixed';
      input.report({ resource: sourceOf(rt), severity: 'warning', code: 'ServingLastAccepted', message });
    }
    if (!back.length) for (const key of cycles.keys()) chosen.delete(key);
  }
}

/** Nodes on a cycle (Tarjan's strongly connected components), each with a cycle through it: [a, b, a]. */
function cyclesThrough(edges: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  let next = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    order.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!order.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const v of [...edges.keys()].sort()) if (!order.has(v)) connect(v);
  const out = new Map<string, string[]>();
  for (const component of components) {
    const members = new Set(component);
    const self = component.length === 1 && (edges.get(component[0]!) ?? []).includes(component[0]!);
    if (component.length < 2 && !self) continue;
    for (const start of [...component].sort()) out.set(start, shortestCycle(start, members, edges));
  }
  return out;
}

function shortestCycle(start: string, members: ReadonlySet<string>, edges: ReadonlyMap<string, readonly string[]>): string[] {
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of [...(edges.get(v) ?? [])].sort()) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u: string | undefined = v; u !== undefined && u !== start; u = from.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** What a served table delegates to and cannot: Gloo's warnings (missing, nothing selected), or rejected. */
function reportTargets(chosen: ReadonlyMap<string, RouteTable>, targetsOf: (rt: RouteTable) => Targets): Report[] {
  const reports: Report[] = [];
  for (const rt of chosen.values()) {
    for (const { where, ...selection } of targetsOf(rt)) {
      const warn = (message: string): void =>
        void reports.push({ resource: sourceOf(rt), severity: 'warning', code: 'RouteTableNotFound', message: `${where}: ${message}` });
      if (selection.warning) warn(selection.warning);
      for (const key of selection.keys) if (!chosen.has(key)) warn(`route table ${key.replace('/', '.')} is rejected`);
    }
  }
  return reports;
}

function sameSpec(a: LegateResource, b: LegateResource): boolean {
  return a === b || JSON.stringify(a.spec) === JSON.stringify(b.spec);
}

/** A virtual service of its own, for checking a RouteTable's routes without a parent. */
function standIn(rt: RouteTable): VirtualService {
  return { kind: 'VirtualService', apiVersion: rt.apiVersion, metadata: rt.metadata, spec: { virtualHost: {} }, raw: rt.raw };
}

/**
 * The options of a delegating route, bound as if it answered itself (they only ever serve merged into
 * the routes it delegates to): whether they have no problems; problems and warnings go to `sink`.
 */
function delegatedOptionsFit<T>(route: Route, site: RouteSite, name: string, translateRoute: TranslateRoute<T>, sink: BindSink): boolean {
  if (!route.options) return true;
  const own: BindSink = { problems: [], warnings: [] };
  const { delegateAction: _delegate, ...rest } = route;
  // checked as the options of a forwarding route (what they become in the tables), one that needs no upstream
  const { routeAction: _action, directResponseAction: _direct, redirectAction: _redirect, graphqlApiRef: _api, ...options } = rest;
  translateRoute({ ...options, matchers: [], routeAction: { clusterHeader: 'x-legate-delegated' } }, site, name, own);
  sink.problems.push(...own.problems);
  sink.warnings.push(...own.warnings);
  return own.problems.length === 0;
}

/** A RouteTable's routes on their own: delegate matchers, and every other route translated. */
export function checkRouteTable<T>(rt: RouteTable, translateRoute: TranslateRoute<T>): Attempt<true> {
  const sink: BindSink = { problems: [], warnings: [] };
  const vs = standIn(rt);
  (rt.spec.routes ?? []).forEach((route, j) => {
    const where = `routes[${j}]`;
    const site: RouteSite = { vs, index: j, where, namespace: rt.metadata.namespace, routeTable: rt, alone: true };
    if (route.delegateAction) {
      const m = delegateMatcher(route, where);
      if ('code' in m) sink.problems.push(m);
      delegatedOptionsFit(route, site, route.name ?? `<unnamed-${j}>`, translateRoute, sink);
      return;
    }
    translateRoute(route, site, route.name ?? `<unnamed-${j}>`, sink);
  });
  return sink.problems.length ? { problems: sink.problems, warnings: sink.warnings } : { ir: true, problems: [], warnings: sink.warnings };
}

// ---------------------------------------------------------------------------------------------------
// Per VirtualService

/** What flattening one VirtualService looked at (to tell when its result can be reused) and reported on RouteTables. */
export interface DelegationTrace {
  /** RouteTables looked up (selected, or named and missing), by nsName: the served and last accepted versions seen */
  readonly tables: Map<string, { served: RouteTable | undefined; last: LegateResource | undefined }>;
  /** nsNames delegateActions named by ref, there or not (one that appears changes the result) */
  readonly refs: Set<string>;
  /** delegateActions with a selector evaluated (a table they select that was not there changes the result) */
  readonly selectors: { action: DelegateAction; ownerNs: string }[];
  /** reports on RouteTables (problems under a parent, last accepted versions served there) */
  readonly reports: Report[];
  /** tables whose served version had problems under their parent here (their last accepted version was tried) */
  readonly troubled: Set<string>;
}

export function newTrace(): DelegationTrace {
  return { tables: new Map(), refs: new Set(), selectors: [], reports: [], troubled: new Set() };
}

/** Whether a VirtualService flattened with `trace` would flatten the same now. */
export function traceUnchanged(trace: DelegationTrace, tables: RouteTables): boolean {
  if (!tables.changed) return false;
  const { changed, lastOnly, index } = tables;
  if (!changed.size) return true;
  // a table's last accepted version matters only where its served version had problems
  const matters = (key: string): boolean => !lastOnly.has(key) || trace.troubled.has(key);
  // a table that appeared where a ref names it or a selector picks it
  const appeared = (key: string): boolean => !trace.tables.has(key) && index.byKey.has(key);
  // whichever is smaller is walked: the tables changed (an edit) or those the trace names (a load)
  if (changed.size <= trace.tables.size + trace.refs.size) {
    for (const key of changed) {
      if (trace.tables.has(key) ? matters(key) : trace.refs.has(key) && appeared(key)) return false;
    }
  } else {
    for (const key of trace.tables.keys()) if (changed.has(key) && matters(key)) return false;
    for (const key of trace.refs) if (changed.has(key) && appeared(key)) return false;
  }
  if (!trace.selectors.length) return true;
  for (const key of changed) {
    const rt = index.byKey.get(key);
    if (rt && !trace.tables.has(key) && trace.selectors.some((s) => selects(s.action, s.ownerNs, rt))) return false;
  }
  return true;
}

interface Entry<T> {
  route: Route;
  ir: T;
}

interface Walk<T> {
  vs: VirtualService;
  tables: RouteTables;
  translateRoute: TranslateRoute<T>;
  trace: DelegationTrace;
  /** the VirtualService's problems and warnings */
  sink: BindSink;
  /** each route as it is read, before it inherits anything (its own RouteOption references, its UpstreamGroup) */
  prepare: PrepareRoute;
}

/** A route as written -> the route features bind (see prepare.ts); `ns` is where its references resolve. */
export type PrepareRoute = (route: Route, ns: string, where: string) => Route;

/** The VirtualService's routes with every delegation replaced by the routes it stands for, translated. */
export function flattenRoutes<T>(
  vs: VirtualService,
  tables: RouteTables,
  sink: BindSink,
  translateRoute: TranslateRoute<T>,
  trace: DelegationTrace,
  prepare: PrepareRoute = (route) => route,
): T[] {
  const walk: Walk<T> = { vs, tables, translateRoute, trace, sink, prepare };
  return visit(walk, undefined, vs.spec.virtualHost.routes ?? [], undefined, [], '', sink).map((e) => e.ir);
}

/**
 * The routes of one holder (the VirtualService, or a version of a RouteTable under `parent`); its own
 * problems go to `own`, and a RouteTable's make it serve nothing here (visitTable decides).
 */
function visit<T>(
  walk: Walk<T>,
  rt: RouteTable | undefined,
  routes: readonly Route[],
  parent: ParentRoute | undefined,
  chain: readonly string[],
  rootWhere: string,
  own: BindSink,
): Entry<T>[] {
  const entries: Entry<T>[] = [];
  const ns = rt ? rt.metadata.namespace : walk.vs.metadata.namespace;
  routes.forEach((written, j) => {
    const where = rt ? `routes[${j}]` : `virtualHost.routes[${j}]`;
    const original = walk.prepare(written, ns, where);
    const root = rt ? rootWhere : where;
    const ownName = original.name ?? `<unnamed-${j}>`;
    const name = parent && rt ? `${parent.name}_rt:${ns}_${rt.metadata.name}_route:${ownName}` : ownName;
    let route = original;
    if (parent) {
      const merged = mergeWithParent(original, parent, where);
      if ('code' in merged) {
        // As in Gloo, a route whose matchers do not fit its parent's is left out with a warning; the
        // table's other routes keep serving under that parent.
        own.warnings.push(merged);
        return;
      }
      route = merged;
    }
    const site: RouteSite = { vs: walk.vs, index: j, where, namespace: ns, ...(rt ? { routeTable: rt } : {}) };
    if (!route.delegateAction) {
      const sink: BindSink = { problems: [], warnings: [] };
      const ir = walk.translateRoute(route, site, name, sink);
      // what is wrong with an inherited option was reported where it is written (delegatedOptionsFit)
      const inherited = Object.keys(route.options ?? {})
        .filter((k) => original.options?.[k as keyof RouteOptions] === undefined)
        .map((k) => `${where}.options.${k}`);
      const own_ = (p: Problem): boolean => !inherited.some((at) => p.message.startsWith(at) && '.:['.includes(p.message[at.length] ?? ''));
      own.problems.push(...sink.problems.filter(own_));
      own.warnings.push(...sink.warnings.filter(own_));
      if (ir !== undefined) entries.push({ route, ir });
      return;
    }
    const matcher = delegateMatcher(route, where);
    if ('code' in matcher) {
      own.problems.push(matcher);
      return;
    }
    // options at fault are the delegating route's: reported here, and nothing is delegated with them
    if (!delegatedOptionsFit(route, site, name, walk.translateRoute, own)) return;
    const down: ParentRoute = {
      matcher,
      options: route.options,
      name,
      inheritableMatchers: route.inheritableMatchers ?? false,
      inheritablePathMatchers: route.inheritablePathMatchers ?? false,
    };
    const selection = selectTables(route.delegateAction, ns, walk.tables.index);
    const ref = delegateRef(route.delegateAction, ns);
    if (ref) walk.trace.refs.add(nsName(ref.namespace, ref.name));
    else walk.trace.selectors.push({ action: route.delegateAction, ownerNs: ns });
    // a RouteTable's targets are reported on it once per translation (resolveRouteTables)
    const warn = (message: string): void => {
      if (!rt) own.warnings.push({ code: 'RouteTableNotFound', message: `${where}.delegateAction: ${message}` });
    };
    if (selection.warning) warn(selection.warning);
    const byWeight = new Map<number, Entry<T>[][]>();
    for (const key of selection.keys) {
      const served = walk.tables.served.get(key);
      const state = walk.tables.memo.states.get(key);
      walk.trace.tables.set(key, { served: state?.served, last: state?.last });
      if (!served) {
        warn(`route table ${key.replace('/', '.')} is rejected`);
        continue;
      }
      // cycles are rejected up front; this only guards the walk
      if (chain.includes(key)) continue;
      const weight = served.spec.weight ?? 0;
      const list = byWeight.get(weight) ?? [];
      list.push(visitTable(walk, served, down, [...chain, key], root));
      byWeight.set(weight, list);
    }
    for (const weight of [...byWeight.keys()].sort((a, b) => a - b)) {
      const lists = byWeight.get(weight)!;
      entries.push(...(lists.length > 1 ? sortByPath(lists.flat()) : lists.flat()));
    }
  });
  return entries;
}

/** A RouteTable under a parent: its served version, or its last accepted one when only that fits there. */
function visitTable<T>(walk: Walk<T>, served: RouteTable, parent: ParentRoute, chain: readonly string[], root: string): Entry<T>[] {
  const versions = [served];
  const current = walk.tables.index.byKey.get(chain[chain.length - 1]!);
  const last = walk.tables.lastAccepted.get(keyOf(served)) as RouteTable | undefined;
  if (served === current && last && !sameSpec(last, served)) versions.push(last);
  const src = sourceOf(served);
  const report = (severity: Report['severity'], p: Problem): void => {
    walk.trace.reports.push({ resource: src, severity, code: p.code, message: p.message });
  };
  let first: BindSink | undefined;
  for (const version of versions) {
    const own: BindSink = { problems: [], warnings: [] };
    const entries = visit(walk, version, version.spec.routes ?? [], parent, chain, root, own);
    if (!first && own.problems.length) walk.trace.troubled.add(chain[chain.length - 1]!);
    first ??= own;
    if (own.problems.length && version !== versions[versions.length - 1]) continue;
    for (const p of first.problems) report('error', p);
    for (const w of first.warnings) report('warning', w);
    // as Gloo does, the VirtualService's owner sees what is wrong below it (the first item, and how many more)
    const [p, ...more] = first.problems.length ? first.problems : first.warnings;
    if (p) {
      const and = more.length ? ` (and ${more.length} more)` : '';
      walk.sink.warnings.push({ code: p.code, message: `${root}: on sub route table ${src.namespace}.${src.name}: ${p.message}${and}` });
    }
    if (!own.problems.length) {
      if (version !== served)
        report('warning', { code: 'ServingLastAccepted', message: 'serving the last accepted version until this one is fixed' });
      return entries;
    }
  }
  return [];
}
