// Incremental translation with delegation gives what a full run gives, on random worlds: a few
// VirtualServices delegating (by ref and by selector) into a few RouteTables in two namespaces that
// delegate further, with weights, prefixes that do not always fit the parent's, cycles, missing refs,
// invalid tables (rejected: the last accepted version keeps serving), and rbac on JWT providers only
// some virtual hosts declare (a table can then serve under one parent and fall back to its last
// accepted version under another). Random edits follow (now and then a few at once); after every
// step, the run given the previous run's memo must equal a run given only the last accepted
// versions: statuses, reports, IR, snapshots and served bytes (the helpers of incremental-pipeline.test.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RawResource } from '../../controller/api/meta.js';
import type { PipelineOutput } from '../../controller/pipeline.js';
import { Runner, parseOne, served, summary, upstream } from '../support/incremental-runner.js';

const NAMESPACES = ['default', 'team'] as const;
const TABLE_SLOTS = 8;
/** a ref to this slot names a table that never exists */
const MISSING = TABLE_SLOTS;
/** where delegating routes match, and the bases of the tables' own routes: a base fits a parent when it starts with its prefix */
const PREFIXES = ['/a', '/a/n', '/b', '/b/n'] as const;

type Namespace = (typeof NAMESPACES)[number];

/** What a delegateAction picks: a table by ref (its namespace written or not), or tables by label and namespaces. */
type Target =
  | { by: 'ref'; slot: number; namespace: Namespace | undefined }
  | { by: 'selector'; group: string; namespaces: readonly string[] | undefined };

type TableRoute = { kind: 'direct'; sub: '' | '/x' | '/misfit'; rbac: boolean } | { kind: 'delegate'; prefix: string; target: Target };

interface TableModel {
  namespace: Namespace;
  group: string | undefined;
  weight: number | undefined;
  base: string;
  routes: TableRoute[];
  /** rejected on its own: a regex RE2 refuses, or a field of the wrong type */
  invalid: 'regex' | 'schema' | undefined;
}

interface VsModel {
  /** declares the JWT provider the tables' rbac names */
  jwt: boolean;
  routes: { prefix: string; target: Target }[];
}

interface World {
  tables: (TableModel | undefined)[];
  vss: VsModel[];
}

const targetArb: fc.Arbitrary<Target> = fc.oneof(
  fc.record({
    by: fc.constant('ref' as const),
    slot: fc.nat(MISSING),
    namespace: fc.option(fc.constantFrom(...NAMESPACES), { nil: undefined }),
  }),
  fc.record({
    by: fc.constant('selector' as const),
    group: fc.constantFrom('g0', 'g1'),
    namespaces: fc.option(fc.constantFrom(['*'], ['team'], ['default', 'team']), { nil: undefined }),
  }),
);

const tableRouteArb: fc.Arbitrary<TableRoute> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('direct' as const),
      sub: fc.constantFrom('' as const, '/x' as const, '/misfit' as const),
      rbac: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delegate' as const), prefix: fc.constantFrom(...PREFIXES), target: targetArb }) },
);

const tableArb: fc.Arbitrary<TableModel> = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  group: fc.option(fc.constantFrom('g0', 'g1'), { nil: undefined }),
  weight: fc.option(fc.integer({ min: -1, max: 2 }), { nil: undefined }),
  base: fc.constantFrom(...PREFIXES),
  routes: fc.array(tableRouteArb, { minLength: 1, maxLength: 3 }),
  invalid: fc.constantFrom(undefined, undefined, undefined, undefined, 'regex' as const, 'schema' as const),
});

const vsArb: fc.Arbitrary<VsModel> = fc.record({
  jwt: fc.boolean(),
  routes: fc.array(fc.record({ prefix: fc.constantFrom('/a', '/b'), target: targetArb }), { minLength: 1, maxLength: 2 }),
});

const worldArb: fc.Arbitrary<World> = fc.record({
  tables: fc.array(fc.option(tableArb, { nil: undefined, freq: 6 }), { minLength: 2, maxLength: TABLE_SLOTS }),
  vss: fc.array(vsArb, { minLength: 1, maxLength: 4 }),
});

type Edit =
  | { kind: 'replace'; slot: number; table: TableModel }
  | { kind: 'weight'; slot: number; weight: number | undefined }
  | { kind: 'group'; slot: number; group: string | undefined }
  | { kind: 'base'; slot: number; base: string }
  | { kind: 'rbac'; slot: number }
  | { kind: 'invalid'; slot: number; invalid: 'regex' | 'schema' | undefined }
  | { kind: 'delete'; slot: number }
  | { kind: 'restore'; slot: number }
  | { kind: 'target'; vs: number; route: number; target: Target }
  | { kind: 'jwt'; vs: number }
  | { kind: 'nothing' };

// edits favour two slots, so that one table sees several edits in a row (accepted, rejected, edited, fixed)
const slot = fc.oneof({ weight: 2, arbitrary: fc.constantFrom(0, 1) }, { weight: 1, arbitrary: fc.nat(TABLE_SLOTS - 1) });
const editArb: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), slot, table: tableArb }),
  fc.record({ kind: fc.constant('weight' as const), slot, weight: fc.option(fc.integer({ min: -1, max: 2 }), { nil: undefined }) }),
  fc.record({ kind: fc.constant('group' as const), slot, group: fc.option(fc.constantFrom('g0', 'g1'), { nil: undefined }) }),
  fc.record({ kind: fc.constant('base' as const), slot, base: fc.constantFrom(...PREFIXES) }),
  fc.record({ kind: fc.constant('rbac' as const), slot }),
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('invalid' as const),
      slot,
      invalid: fc.constantFrom(undefined, 'regex' as const, 'schema' as const),
    }),
  },
  fc.record({ kind: fc.constant('delete' as const), slot }),
  fc.record({ kind: fc.constant('restore' as const), slot }),
  fc.record({ kind: fc.constant('target' as const), vs: fc.nat(3), route: fc.nat(1), target: targetArb }),
  fc.record({ kind: fc.constant('jwt' as const), vs: fc.nat(3) }),
  { weight: 2, arbitrary: fc.constant({ kind: 'nothing' as const }) },
);

/** mostly one edit a step, now and then a few together */
const stepArb: fc.Arbitrary<Edit[]> = fc.oneof(
  { weight: 4, arbitrary: editArb.map((e) => [e]) },
  { weight: 1, arbitrary: fc.array(editArb, { minLength: 2, maxLength: 3 }) },
);

const tableName = (slot: number): string => `t${slot}`;

function targetSpec(target: Target): object {
  if (target.by === 'ref') return { ref: { name: tableName(target.slot), ...(target.namespace ? { namespace: target.namespace } : {}) } };
  return { selector: { labels: { group: target.group }, ...(target.namespaces ? { namespaces: target.namespaces } : {}) } };
}

const rbac = { policies: { admins: { principals: [{ jwtPrincipal: { provider: 'kube', claims: { sub: 'alice' } } }] } } };

// the key of the golden delegation-rbac case
const jwtProviders = {
  providers: {
    kube: {
      issuer: 'kubernetes/serviceaccount',
      jwks: {
        local: {
          key: [
            '-----BEGIN PUBLIC KEY-----',
            'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEApj2ac/hNZLm/66yoDQJ2',
            'mNtQPX+3RXcTMhLnChtFEsvpDhoMlS0Gakqkmg78OGWs7U4f6m1nD/Jc7UThxxks',
            'o9x676sxxLKxo8TC1w6t47HQHucJE0O5wFNtC8+4jwl4zOBVwnkAEeN+X9jJq2E7',
            'AZ+K6hUycOkWo8ZtZx4rm1bnlDykOa9VCuG3MCKXNexujLIixHOeEOylp7wNedSZ',
            '4Wfc5rM9Cich2F6pIoCwslHYcED+3FZ1ZmQ07h1GG7Aaak4N4XVeJLsDuO88eVkv',
            'FHlGdkW6zSj9HCz10XkSPK7LENbgHxyP6Foqw10MANFBMDQpZfNUHVPSo8IaI+Ot',
            'xQIDAQAB',
            '-----END PUBLIC KEY-----',
            '',
          ].join('\n'),
        },
      },
    },
  },
};

function tableText(slot: number, t: TableModel, version: number): string {
  const routes: object[] = t.routes.map((r) => {
    if (r.kind === 'delegate') return { matchers: [{ prefix: r.prefix }], delegateAction: targetSpec(r.target) };
    const prefix = r.sub === '/misfit' ? '/misfit' : `${t.base}${r.sub}`;
    return {
      matchers: [{ prefix }],
      directResponseAction: { status: 200, body: `${tableName(slot)} v${version}` },
      ...(r.rbac ? { options: { rbac } } : {}),
    };
  });
  if (t.invalid === 'regex') routes.push({ matchers: [{ regex: '(' }], directResponseAction: { status: 200 } });
  if (t.invalid === 'schema') routes.push({ matchers: [{ prefix: [7] }], directResponseAction: { status: 200 } });
  return JSON.stringify({
    apiVersion: 'gateway.legate.dev/v1',
    kind: 'RouteTable',
    metadata: { name: tableName(slot), namespace: t.namespace, labels: t.group ? { group: t.group } : {} },
    spec: { ...(t.weight !== undefined ? { weight: t.weight } : {}), routes },
  });
}

function vsText(i: number, v: VsModel): string {
  return JSON.stringify({
    apiVersion: 'gateway.legate.dev/v1',
    kind: 'VirtualService',
    metadata: { name: `vs${i}`, namespace: 'default' },
    spec: {
      virtualHost: {
        domains: [`vs${i}.example.com`],
        ...(v.jwt ? { options: { jwt: jwtProviders } } : {}),
        routes: v.routes.map((r) => ({ matchers: [{ prefix: r.prefix }], delegateAction: targetSpec(r.target) })),
      },
    },
  });
}

/** Applies `edit` to the model; the slots of tables it replaced or removed, the VirtualService it replaced. */
function apply(world: World, deleted: (TableModel | undefined)[], edit: Edit): { tables: number[]; vs?: number } {
  const change = (at: number, next: TableModel | undefined): { tables: number[] } => {
    world.tables[at] = next;
    return { tables: [at] };
  };
  switch (edit.kind) {
    case 'nothing':
      return { tables: [] };
    case 'replace':
      return change(edit.slot, edit.table);
    case 'delete': {
      if (!world.tables[edit.slot]) return { tables: [] };
      deleted[edit.slot] = world.tables[edit.slot];
      return change(edit.slot, undefined);
    }
    case 'restore': {
      const back = deleted[edit.slot];
      if (world.tables[edit.slot] || !back) return { tables: [] };
      return change(edit.slot, back);
    }
    case 'target': {
      const vs = world.vss[edit.vs % world.vss.length]!;
      const routes = vs.routes.map((r, j) => (j === edit.route % vs.routes.length ? { ...r, target: edit.target } : r));
      world.vss[edit.vs % world.vss.length] = { ...vs, routes };
      return { tables: [], vs: edit.vs % world.vss.length };
    }
    case 'jwt': {
      const at = edit.vs % world.vss.length;
      world.vss[at] = { ...world.vss[at]!, jwt: !world.vss[at]!.jwt };
      return { tables: [], vs: at };
    }
    default: {
      const t = world.tables[edit.slot];
      if (!t) return { tables: [] };
      if (edit.kind === 'weight') return change(edit.slot, { ...t, weight: edit.weight });
      if (edit.kind === 'group') return change(edit.slot, { ...t, group: edit.group });
      if (edit.kind === 'base') return change(edit.slot, { ...t, base: edit.base });
      if (edit.kind === 'invalid') return change(edit.slot, { ...t, invalid: edit.invalid });
      // rbac switched on or off on the table's first direct response (or one added)
      const first = t.routes.findIndex((r) => r.kind === 'direct');
      const routes: TableRoute[] =
        first < 0
          ? [...t.routes, { kind: 'direct', sub: '', rbac: true }]
          : t.routes.map((r, j) => (j === first && r.kind === 'direct' ? { ...r, rbac: !r.rbac } : r));
      return change(edit.slot, { ...t, routes });
    }
  }
}

const rtKey = (slot: number, t: TableModel): string => `RouteTable/${t.namespace}/${tableName(slot)}`;
const servingLastGood = (out: PipelineOutput, key: string): boolean => {
  const status = out.listed.get(key)?.status;
  return status?.state === 'Rejected' && (status.reason ?? '').includes('serving the last accepted version');
};

/** How often the runs went through the cases the incremental path treats specially. */
const hits = { keepLastGoodEdited: 0, keepLastGoodFixed: 0, servedLastAccepted: 0, cycles: 0 };

/** Runs `steps` (the edits of each step together, as a source reload hands over several) on `initial`. */
function check(initial: World, steps: Edit[][]): void {
  const world: World = { tables: [...initial.tables], vss: [...initial.vss] };
  const deleted: (TableModel | undefined)[] = [];
  const resources = new Map<string, RawResource>();
  let version = 0;
  // an edit replaces the objects it changed; every other object stays the very same (as sources hand them over)
  const putTable = (at: number): void => {
    const t = world.tables[at];
    if (t) resources.set(tableName(at), parseOne(tableText(at, t, ++version)));
    else resources.delete(tableName(at));
  };
  resources.set('u1', parseOne(upstream('u1', 8001)));
  world.tables.forEach((_, at) => putTable(at));
  world.vss.forEach((v, i) => resources.set(`vs${i}`, parseOne(vsText(i, v))));

  const full = new Runner(false);
  const incremental = new Runner(true);
  let previous: PipelineOutput | undefined;
  for (const [step, edits] of [[], ...steps].entries()) {
    const changed = { tables: new Set<number>(), vss: new Set<number>() };
    for (const edit of edits) {
      const one = apply(world, deleted, edit);
      for (const at of one.tables) changed.tables.add(at);
      if (one.vs !== undefined) changed.vss.add(one.vs);
    }
    for (const at of changed.tables) putTable(at);
    for (const i of changed.vss) resources.set(`vs${i}`, parseOne(vsText(i, world.vss[i]!)));
    const list = [...resources.values()];
    const a = full.run(list);
    const b = incremental.run(list);
    const label = `step ${step}: ${JSON.stringify(edits)}`;
    expect(summary(b), label).toEqual(summary(a));
    expect(served(incremental.cache), label).toEqual(served(full.cache));
    for (const at of changed.tables) {
      const t = world.tables[at];
      if (!t || !previous || !servingLastGood(previous, rtKey(at, t))) continue;
      if (servingLastGood(a, rtKey(at, t))) hits.keepLastGoodEdited++;
      else if (a.listed.get(rtKey(at, t))?.status.state !== 'Rejected') hits.keepLastGoodFixed++;
    }
    if (a.reports.some((r) => r.code === 'ServingLastAccepted')) hits.servedLastAccepted++;
    if (a.reports.some((r) => r.message.includes('delegation cycle'))) hits.cycles++;
    previous = a;
  }
}

const table = (t: Partial<TableModel> & Pick<TableModel, 'routes'>): TableModel => ({
  namespace: 'default',
  group: undefined,
  weight: undefined,
  base: '/a',
  invalid: undefined,
  ...t,
});
const direct = (rbacOn = false): TableRoute => ({ kind: 'direct', sub: '', rbac: rbacOn });
const ref = (at: number): Target => ({ by: 'ref', slot: at, namespace: undefined });

describe('incremental translation with delegation, on random worlds', () => {
  it('gives the same statuses, reports, IR, snapshots and served bytes as full runs after every edit', () => {
    const before = { ...hits };
    fc.assert(
      fc.property(worldArb, fc.array(stepArb, { minLength: 1, maxLength: 12 }), (world, steps) => check(world, steps)),
      { numRuns: 250 },
    );
    // the generator reaches keep last good: rejected tables serving their last accepted version edited
    // again while invalid, and last accepted versions serving (on their own or under one parent)
    expect(hits.keepLastGoodEdited - before.keepLastGoodEdited).toBeGreaterThan(0);
    expect(hits.servedLastAccepted - before.servedLastAccepted).toBeGreaterThan(0);
    expect(hits.cycles - before.cycles).toBeGreaterThan(0);
  });

  it("keeps serving a rejected table's last accepted version through edits while it is invalid, and serves its fix", () => {
    const before = { ...hits };
    // t0 nests t1; both edited while t0 is rejected
    const world: World = {
      tables: [
        table({ routes: [direct(), { kind: 'delegate', prefix: '/a/n', target: ref(1) }] }),
        table({ base: '/a/n', routes: [direct()] }),
      ],
      vss: [{ jwt: false, routes: [{ prefix: '/a', target: ref(0) }] }],
    };
    check(world, [
      [{ kind: 'invalid', slot: 0, invalid: 'regex' }],
      [{ kind: 'weight', slot: 0, weight: 1 }],
      [{ kind: 'base', slot: 1, base: '/a/n' }],
      [{ kind: 'invalid', slot: 0, invalid: 'schema' }],
      [{ kind: 'nothing' }],
      [{ kind: 'invalid', slot: 0, invalid: undefined }],
      [{ kind: 'nothing' }],
    ]);
    expect(hits.keepLastGoodEdited - before.keepLastGoodEdited).toBe(2);
    expect(hits.keepLastGoodFixed - before.keepLastGoodFixed).toBe(1);
  });

  it('flattens a VirtualService again when the last accepted version of a table that had problems under it moved', () => {
    // vs0 declares no JWT provider: t0's second version (rbac naming one) fails under it, and vs0 serves t0's first
    const vs0: VsModel = { jwt: false, routes: [{ prefix: '/a', target: ref(0) }] };
    const first = parseOne(tableText(0, table({ routes: [direct()] }), 1));
    const second = parseOne(tableText(0, table({ routes: [direct(true)] }), 2));
    const others = [parseOne(upstream('u1', 8001)), parseOne(vsText(0, vs0))];
    const full = new Runner(false);
    const incremental = new Runner(true);
    full.run([...others, first]);
    incremental.run([...others, first]);
    const a = full.run([...others, second]);
    const b = incremental.run([...others, second]);
    expect(summary(b)).toEqual(summary(a));
    expect(a.reports.map((r) => r.code)).toContain('ServingLastAccepted');
    // The pipeline's own feedback never moves the last accepted version of a table a VirtualService had
    // problems with (those problems keep it from being accepted): the map is handed over moved here.
    const secondTyped = new Runner(false).run([others[0]!, second, parseOne(vsText(0, { ...vs0, jwt: true }))]).accepted;
    const moved = secondTyped.get('RouteTable/default/t0');
    expect(JSON.stringify(moved?.spec)).toContain('t0 v2');
    // each runner's own map (the objects in it are what its memo was made with)
    full.lastAccepted = new Map(a.accepted).set('RouteTable/default/t0', moved!);
    incremental.lastAccepted = new Map(b.accepted).set('RouteTable/default/t0', moved!);
    const c = full.run([...others, second]);
    const d = incremental.run([...others, second]);
    expect(summary(d)).toEqual(summary(c));
    expect(served(incremental.cache)).toEqual(served(full.cache));
    // the last accepted version is now the one that fails: vs0 serves nothing of t0
    expect(JSON.stringify(c.proxies)).not.toContain('t0 v1');
  });
});
