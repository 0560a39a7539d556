// Which RouteTables a delegateAction names, as Gloo selects them (projects/gateway/pkg/translator
// route_table_selector.go): a ref (or the deprecated top-level name/namespace), or a selector of
// labels or expressions (Kubernetes label-selector semantics) over namespaces (default: the namespace
// of the resource that delegates; `*`: all). What cannot be selected is a warning, as in Gloo.
import type { RouteTable } from '../../api/resources.js';
import { selectorOperator, type DelegateAction, type RouteTableSelector, type SelectorOperator } from '../../api/routes.js';
import { nsName } from '../names.js';

export interface Selection {
  /** nsNames of the tables picked, ordered by namespace then name (Gloo's snapshot order) */
  keys: string[];
  /** why nothing could be picked (Gloo's warning) */
  warning?: string;
}

/** The current RouteTables, looked up by nsName and listed in Gloo's order. */
export interface TableIndex {
  readonly byKey: ReadonlyMap<string, RouteTable>;
  readonly ordered: readonly RouteTable[];
}

export function tableIndex(tables: readonly RouteTable[]): TableIndex {
  // Gloo's lists are sorted by namespace, then name, as Go compares strings
  const cmp = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
  const ordered = [...tables].sort((a, b) => cmp(a.metadata.namespace, b.metadata.namespace) || cmp(a.metadata.name, b.metadata.name));
  return { byKey: new Map(ordered.map((t) => [nsName(t.metadata.namespace, t.metadata.name), t])), ordered };
}

/** The ref a delegateAction names, if it names one (the deprecated name/namespace win over ref, as in Gloo). */
export function delegateRef(action: DelegateAction, ownerNs: string): { namespace: string; name: string } | undefined {
  if (action.name || action.namespace) return { namespace: action.namespace || ownerNs, name: action.name ?? '' };
  if (action.ref) return { namespace: action.ref.namespace || ownerNs, name: action.ref.name };
  return undefined;
}

export function selectTables(action: DelegateAction, ownerNs: string, index: TableIndex): Selection {
  const ref = delegateRef(action, ownerNs);
  if (ref) {
    const key = nsName(ref.namespace, ref.name);
    if (!index.byKey.has(key)) return { keys: [], warning: `route table ${ref.namespace}.${ref.name} missing` };
    return { keys: [key] };
  }
  if (!action.selector) {
    return {
      keys: [],
      warning: 'cannot determine delegation target: you must specify a route table either via a resource reference or a selector',
    };
  }
  const matcher = compileSelector(action.selector, ownerNs);
  if (typeof matcher === 'string') return { keys: [], warning: matcher };
  const keys = index.ordered.filter(matcher).map((t) => nsName(t.metadata.namespace, t.metadata.name));
  if (!keys.length) return { keys, warning: 'no route table matches the given selector' };
  return { keys };
}

/** Whether `table` is one `action` would select (for telling which selections a changed table affects). */
export function selects(action: DelegateAction, ownerNs: string, table: RouteTable): boolean {
  const ref = delegateRef(action, ownerNs);
  if (ref) return ref.namespace === table.metadata.namespace && ref.name === table.metadata.name;
  if (!action.selector) return false;
  const matcher = compileSelector(action.selector, ownerNs);
  return typeof matcher !== 'string' && matcher(table);
}

type TableMatcher = (t: RouteTable) => boolean;

/** A predicate over tables, or Gloo's warning for a selector it cannot use. */
function compileSelector(selector: RouteTableSelector, ownerNs: string): TableMatcher | string {
  const namespaces = selector.namespaces ?? [];
  const inNamespace: (ns: string) => boolean = namespaces.includes('*')
    ? () => true
    : namespaces.length
      ? (ns) => namespaces.includes(ns)
      : (ns) => ns === ownerNs;
  const labels = Object.entries(selector.labels ?? {});
  const expressions = selector.expressions ?? [];
  if (labels.length && expressions.length) return 'cannot use both labels and expressions within the same selector';
  const matches = expressionsMatcher(expressions, 'the route table selector expression is invalid');
  if (typeof matches === 'string') return matches;
  return (t) => {
    if (!inNamespace(t.metadata.namespace)) return false;
    const have = t.metadata.labels ?? {};
    return labels.every(([k, v]) => have[k] === v) && matches(have);
  };
}

type LabelMatcher = (labels: Readonly<Record<string, string>>) => boolean;

/**
 * Whether labels meet every expression (Kubernetes label requirements, Gloo's operators), or why an expression
 * is invalid: `expressions[i]: <why>: <invalid>`.
 */
export function expressionsMatcher(
  expressions: readonly { key: string; operator?: string | number | undefined; values?: string[] | undefined }[],
  invalid: string,
): LabelMatcher | string {
  const requirements: LabelMatcher[] = [];
  for (const [i, e] of expressions.entries()) {
    const op = selectorOperator(e.operator);
    const req = op ? requirement(e.key, op, e.values ?? []) : `unknown operator ${JSON.stringify(e.operator)}`;
    if (typeof req === 'string') return `expressions[${i}]: ${req}: ${invalid}`;
    requirements.push(req);
  }
  return (l) => requirements.every((r) => r(l));
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function keyError(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `key: Invalid value: ${JSON.stringify(key)}: prefix part must be a DNS subdomain`;
  if (!name) return `key: Invalid value: ${JSON.stringify(key)}: name part must be non-empty`;
  if (name.length > 63 || !LABEL_NAME.test(name))
    return `key: Invalid value: ${JSON.stringify(key)}: name part must be at most 63 alphanumeric characters, '-', '_' or '.'`;
  return undefined;
}

/** A Kubernetes label requirement (k8s.io/apimachinery labels.NewRequirement), or why it is invalid. */
function requirement(key: string, op: SelectorOperator, values: string[]): ((l: Readonly<Record<string, string>>) => boolean) | string {
  const bad = keyError(key);
  if (bad) return bad;
  const v = JSON.stringify(values);
  switch (op) {
    case 'In':
    case 'NotIn':
      if (!values.length) return `values: Invalid value: ${v}: for 'in', 'notin' operators, values set can't be empty`;
      break;
    case 'Equals':
    case 'DoubleEquals':
    case 'NotEquals':
      if (values.length !== 1) return `values: Invalid value: ${v}: exact-match compatibility requires one single value`;
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length) return `values: Invalid value: ${v}: values set must be empty for exists and does not exist`;
      break;
    case 'GreaterThan':
    case 'LessThan':
      if (values.length !== 1) return `values: Invalid value: ${v}: for 'Gt', 'Lt' operators, exactly one value is required`;
      if (!/^[-+]?\d+$/.test(values[0]!)) return `values[0]: Invalid value: ${v}: for 'Gt', 'Lt' operators, the value must be an integer`;
      break;
  }
  for (const [i, value] of values.entries()) {
    if (value.length > 63 || !LABEL_VALUE.test(value))
      return `values[${i}]: Invalid value: ${JSON.stringify(value)}: a label value is at most 63 alphanumeric characters, '-', '_' or '.'`;
  }
  const set = new Set(values);
  switch (op) {
    case 'In':
    case 'Equals':
    case 'DoubleEquals':
      return (l) => Object.hasOwn(l, key) && set.has(l[key]!);
    case 'NotIn':
    case 'NotEquals':
      return (l) => !Object.hasOwn(l, key) || !set.has(l[key]!);
    case 'Exists':
      return (l) => Object.hasOwn(l, key);
    case 'DoesNotExist':
      return (l) => !Object.hasOwn(l, key);
    case 'GreaterThan':
    case 'LessThan': {
      const bound = Number(values[0]);
      return (l) => {
        const have = l[key];
        if (have === undefined || !/^[-+]?\d+$/.test(have)) return false;
        return op === 'GreaterThan' ? Number(have) > bound : Number(have) < bound;
      };
    }
  }
}
