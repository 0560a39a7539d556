// ~1,000 malformed or hostile resource documents for the resource fuzz suite, generated from a seed
// (the same list every run): wrong types, huge strings, deep nesting, YAML alias bombs, duplicate keys,
// invalid regexes, conflicting domains and more. Every one must be refused with a reason; none may
// crash the controller or take its memory with it.

export type Outcome = 'Rejected' | 'Accepted' | 'Warning' | 'load error';

export interface HostileDocument {
  /** file name in the watched directory */
  file: string;
  category: string;
  text: string;
  /** the resource's identity when the YAML loads, else undefined (the file has a load error) */
  resource?: { kind: string; namespace: string; name: string };
  /** what may come of it: Rejected, or a load error; a few are merely large and served (huge but valid path prefixes) */
  expect: readonly Outcome[];
}

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The good VirtualService's domain: fuzzed VirtualServices that claim it must be rejected as conflicts. */
export const GOOD_DOMAIN = 'good.example.com';

const head = (name: string, kind = 'VirtualService', apiVersion = 'gateway.legate.dev/v1') =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata: { name: ${name}, namespace: fuzz }\n`;

const vs = (name: string, spec: string) => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: fuzz }
spec:
${spec}`;

let routes = 0;
const route = (matcher: string, action = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }') =>
  `  virtualHost:
    domains: ['fuzz-${routes++}.example.com']
    routes:
      - matchers: [${matcher}]
        ${action}
`;

const WRONG_VALUES = ['42', 'true', 'null', '[]', '{}', '"str"', '-1', '1e400', '.nan', '!!binary aGVsbG8=', '0x10', '"\\u0000"', '[[1]]'];

export function hostileDocuments(count = 1000, seed = 15): HostileDocument[] {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const docs: HostileDocument[] = [];
  const add = (category: string, text: string, name?: string, kind = 'VirtualService', expect?: Outcome[]): void => {
    const i = docs.length;
    docs.push({
      file: `fuzz-${String(i).padStart(4, '0')}-${category}.yaml`,
      category,
      text,
      ...(name ? { resource: { kind, namespace: 'fuzz', name } } : {}),
      expect: expect ?? (name ? ['Rejected'] : ['load error']),
    });
  };
  const generators: [string, (n: string) => void][] = [
    // a field of a valid VirtualService replaced by a value of the wrong type
    [
      'wrong-type',
      (n) => {
        const v = pick(WRONG_VALUES);
        const at = Math.floor(random() * 6);
        const specs = [
          `  virtualHost: ${v}\n`,
          `  virtualHost: { domains: ${v}, routes: [] }\n`,
          `  virtualHost:\n    domains: ['${n}.example.com']\n    routes: ${v === '[]' ? '"x"' : v}\n`,
          route(`{ prefix: ${v === '"str"' ? 7 : v} }`),
          route('{ prefix: /x }', `routeAction: { single: { upstream: ${v === '{}' ? 7 : v} } }`),
          route('{ prefix: /x }', `routeAction: { single: { kube: { ref: { name: x }, port: ${v === '-1' ? 70000 : v} } } }`),
        ];
        // valid after all: an empty virtualHost or empty domains (every domain, no routes: Rejected when
        // another such one holds `*` already) and a NUL path prefix (matches nothing)
        const valid = (at === 0 && v === '{}') || (at === 1 && v === '[]') || (at === 3 && v === '"\\u0000"');
        // a kube port that parses after all (42, 0x10) names a Service that does not exist: a Warning, as in Gloo
        const outcomes: Outcome[] = valid ? ['Accepted', 'Rejected'] : at === 5 ? ['Rejected', 'Warning'] : ['Rejected'];
        add('wrong-type', vs(n, specs[at]!), n, 'VirtualService', outcomes);
      },
    ],
    // strings far larger than any real field
    [
      'huge-string',
      (n) => {
        const size = pick([10_000, 100_000, 400_000]);
        const where = Math.floor(random() * 3);
        const big = 'a'.repeat(size);
        const text =
          where === 0
            ? vs(n, route(`{ prefix: /${big} }`))
            : where === 1
              ? vs(n, `  virtualHost:\n    domains: ['${big}.example.com']\n    routes: []\n  unknownField: 1\n`)
              : vs(
                  n,
                  route(`{ prefix: /x, headers: [{ name: x-${big.slice(0, 5000)}, value: '${big}', regex: true }] }`).replace('/x', '/x('),
                );
        add('huge-string', text, n, 'VirtualService', [where === 0 ? 'Accepted' : 'Rejected']);
      },
    ],
    // nesting deeper than any parser should follow
    [
      'deep-nesting',
      (n) => {
        const depth = pick([200, 2_000, 20_000]);
        const flow = random() < 0.5;
        const value = flow ? '['.repeat(depth) + ']'.repeat(depth) : '{a: '.repeat(depth) + '1' + '}'.repeat(depth);
        // the YAML parser refuses some depths itself; the schema refuses the unknown field otherwise
        add(
          'deep-nesting',
          vs(n, `  virtualHost:\n    domains: ['${n}.example.com']\n    routes: []\n  deep: ${value}\n`),
          n,
          'VirtualService',
          ['Rejected', 'load error'],
        );
      },
    ],
    // billion laughs: each alias level multiplies the size
    [
      'alias-bomb',
      (n) => {
        const levels = pick([6, 9, 12]);
        let text = `${head(n)}spec:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n`;
        for (let l = 1; l <= levels; l++) text += `  a${l}: &a${l} [${Array.from({ length: 9 }, () => `*a${l - 1}`).join(', ')}]\n`;
        add('alias-bomb', text);
      },
    ],
    // duplicate keys at the top or deep inside
    [
      'duplicate-keys',
      (n) => {
        const text =
          random() < 0.5
            ? `${head(n)}kind: Upstream\nspec: {}\n`
            : vs(n, `  virtualHost:\n    domains: ['${n}.example.com']\n    domains: ['${GOOD_DOMAIN}']\n    routes: []\n`);
        add('duplicate-keys', text);
      },
    ],
    // regexes RE2 (Envoy) refuses, or that are expensive
    [
      'invalid-regex',
      (n) => {
        const bad = pick([
          '(',
          '[a-',
          '(?<=x)y',
          '(a)\\1',
          'a{1001}',
          '(?P<n>x',
          '*',
          'x++',
          '\\p{Nope}',
          '((((((((((a))))))))))'.repeat(50) + ')',
        ]);
        const where = Math.floor(random() * 3);
        const esc = JSON.stringify(bad);
        const m =
          where === 0
            ? `{ regex: ${esc} }`
            : where === 1
              ? `{ prefix: /x, headers: [{ name: x-h, value: ${esc}, regex: true }] }`
              : `{ prefix: /x, queryParameters: [{ name: q, value: ${esc}, regex: true }] }`;
        add('invalid-regex', vs(n, route(m)), n);
      },
    ],
    // a domain the good VirtualService already serves
    [
      'conflicting-domain',
      (n) =>
        add(
          'conflicting-domain',
          vs(
            n,
            `  virtualHost:\n    domains: ['${GOOD_DOMAIN}']\n    routes:\n` +
              `      - matchers: [{ prefix: / }]\n        directResponseAction: { status: 500, body: stolen }\n`,
          ),
          n,
        ),
    ],
    // references to what does not exist, unknown kinds and fields, hostile names
    [
      'dangling-or-unknown',
      (n) => {
        const which = Math.floor(random() * 6);
        if (which === 0)
          add(
            'dangling-or-unknown',
            vs(n, route('{ prefix: /x }', 'routeAction: { single: { upstream: { name: nope, namespace: nowhere } } }')),
            n,
            'VirtualService',
            // as in Gloo: served, that route answering 503, with the reason in a Warning
            ['Warning'],
          );
        else if (which === 1)
          add('dangling-or-unknown', vs(n, route('{ prefix: /x }', 'graphqlApiRef: { name: nope, namespace: nowhere }')), n);
        else if (which === 2)
          add(
            'dangling-or-unknown',
            vs(
              n,
              route('{ prefix: /x }').replace(
                'routes:',
                'routes:\n      - matchers: [{ prefix: /y }]\n' +
                  '        options: { extauth: { configRef: { name: nope } } }\n        routeAction: 5\n',
              ),
            ),
            n,
          );
        else if (which === 3)
          add(
            'dangling-or-unknown',
            `${head(n, 'Upstream', 'legate.dev/v1')}spec:\n  static: { hosts: [{ addr: '::::', port: 99999 }] }\n`,
            n,
            'Upstream',
          );
        else if (which === 4)
          add(
            'dangling-or-unknown',
            vs(
              n,
              `  __proto__: { polluted: true }\n  constructor: { prototype: { polluted: true } }\n` +
                `  virtualHost: { domains: ['${n}.example.com'], routes: [] }\n`,
            ),
            n,
          );
        else {
          const text =
            `apiVersion: gateway.legate.dev/v1\nkind: VirtualService\n` +
            `metadata: { name: "${n}/../../etc", namespace: "fuzz\\u0000x" }\nspec: 5\n`;
          docs.push({
            file: `fuzz-${String(docs.length).padStart(4, '0')}-dangling-or-unknown.yaml`,
            category: 'dangling-or-unknown',
            text,
            expect: ['Rejected'],
            resource: { kind: 'VirtualService', namespace: 'fuzz\u0000x', name: `${n}/../../etc` },
          });
        }
      },
    ],
    // not YAML at all, or not a resource
    [
      'not-a-resource',
      (n) => {
        const which = Math.floor(random() * 5);
        const texts = [
          `{{{{ ${n}`,
          `- just\n- a\n- list ${n}\n`,
          `apiVersion: 5\nkind: [VirtualService]\nmetadata: ${n}\n`,
          `kind: VirtualService\nmetadata: { name: ${n} }\n`,
          `${head(n)}spec: !!js/function 'function(){}'\n`,
        ];
        if (which === 4)
          add('not-a-resource', texts[which]!, n); // an unknown tag is a plain string: spec is not an object
        else add('not-a-resource', texts[which]!);
      },
    ],
  ];
  for (let i = 0; docs.length < count; i++) {
    const [, gen] = generators[i % generators.length]!;
    gen(`fz${i}`);
  }
  return docs;
}
