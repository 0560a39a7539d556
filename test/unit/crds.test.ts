// The generated CRDs are structural (the API server refuses them otherwise; the e2e suite applies
// them to a real one) and carry what users expect: both group sets, short names once, status.
import { describe, expect, it } from 'vitest';
import { customResourceDefinitions, structural } from '../../controller/api/crds.js';
import { KIND_NAMES, kindInfo } from '../../controller/api/kinds.js';

type Node = Record<string, unknown>;

/** Paths of schema nodes that break Kubernetes' structural rules (as far as Legate's schemas go). */
function nonStructural(node: unknown, at: string, out: string[] = []): string[] {
  if (!node || typeof node !== 'object') return out;
  const n = node as Node;
  if (n['type'] === undefined && n['x-kubernetes-preserve-unknown-fields'] !== true) out.push(`${at}: no type`);
  // keywords Kubernetes' OpenAPI v3 subset does not declare: server-side apply refuses the CRD
  for (const k of ['anyOf', 'oneOf', 'allOf', '$ref', '$schema', 'contentEncoding', 'contentMediaType'])
    if (k in n) out.push(`${at}: ${k}`);
  if (n['additionalProperties'] === false) out.push(`${at}: additionalProperties false`);
  if (n['properties'] && n['additionalProperties']) out.push(`${at}: properties and additionalProperties`);
  for (const [name, sub] of Object.entries((n['properties'] as Node | undefined) ?? {})) nonStructural(sub, `${at}.${name}`, out);
  if (n['items']) nonStructural(n['items'], `${at}[]`, out);
  if (n['additionalProperties'] && typeof n['additionalProperties'] === 'object') nonStructural(n['additionalProperties'], `${at}{}`, out);
  return out;
}

describe('customResourceDefinitions', () => {
  const legateOnly = customResourceDefinitions();
  const withGloo = customResourceDefinitions({ glooGroups: true });
  const versions = (crd: Node) => (crd['spec'] as { versions: Node[] }).versions;

  it('has one CRD per custom kind, and one more per Gloo alias group with --gloo-groups', () => {
    const custom = KIND_NAMES.filter((k) => kindInfo(k).group !== '');
    expect(legateOnly).toHaveLength(custom.length);
    expect(withGloo).toHaveLength(custom.length + custom.reduce((n, k) => n + kindInfo(k).aliases.length, 0));
  });

  it('gives only structural schemas', () => {
    for (const crd of withGloo) {
      const name = (crd['metadata'] as { name: string }).name;
      expect(nonStructural(versions(crd)[0]?.['schema'] && (versions(crd)[0]!['schema'] as Node)['openAPIV3Schema'], name)).toEqual([]);
    }
  });

  it("claims short names once: Legate's groups alone, or Gloo's groups (with Gloo's categories) when both are defined", () => {
    const names = (crd: Node) => (crd['spec'] as { names: { shortNames?: string[]; categories?: string[] } }).names;
    const named = (crds: Node[], name: string) => crds.find((c) => (c['metadata'] as { name: string }).name === name);
    expect(names(named(legateOnly, 'virtualservices.gateway.legate.dev')!).shortNames).toEqual(['vs']);
    expect(names(named(withGloo, 'virtualservices.gateway.legate.dev')!).shortNames).toBeUndefined();
    const gloo = names(named(withGloo, 'virtualservices.gateway.solo.io')!);
    expect(gloo.shortNames).toEqual(['vs']);
    expect(gloo.categories).toEqual(['gloo', 'solo-io', 'legate']);
    expect(names(named(withGloo, 'routetables.gateway.solo.io')!).shortNames).toEqual(['rt']);
    expect(names(named(withGloo, 'upstreams.gloo.solo.io')!).shortNames).toEqual(['us']);
    // each short name is claimed by one CRD only
    const claimed = withGloo.flatMap((c) => names(c).shortNames ?? []);
    expect(new Set(claimed).size).toBe(claimed.length);
    for (const crd of withGloo) expect(versions(crd)[0]?.['subresources']).toEqual({ status: {} });
  });

  it('keeps unknown fields in every object of every CRD, Gloo groups and Legate groups (nothing pruned unseen)', () => {
    /** paths of objects with declared properties that prune what they do not declare */
    const pruning = (node: unknown, at: string, out: string[] = []): string[] => {
      if (!node || typeof node !== 'object') return out;
      const n = node as Node;
      if (n['properties'] && n['x-kubernetes-preserve-unknown-fields'] !== true) out.push(at);
      for (const [k, v] of Object.entries((n['properties'] as Node | undefined) ?? {})) pruning(v, `${at}.${k}`, out);
      if (n['items']) pruning(n['items'], `${at}[]`, out);
      return out;
    };
    const specOf = (crd: Node) =>
      ((versions(crd)[0]!['schema'] as Node)['openAPIV3Schema'] as { properties: { spec: Node } }).properties.spec;
    const byName = (list: Node[], name: string) => list.find((c) => (c['metadata'] as { name: string }).name === name)!;
    for (const crd of withGloo.filter((c) => (c['metadata'] as { labels: Record<string, string> }).labels['legate.dev/gloo-alias']))
      expect(pruning(specOf(crd), (crd['metadata'] as { name: string }).name)).toEqual([]);
    for (const crd of legateOnly) expect(pruning(specOf(crd), (crd['metadata'] as { name: string }).name)).toEqual([]);
    expect(specOf(byName(legateOnly, 'virtualservices.gateway.legate.dev'))['x-kubernetes-preserve-unknown-fields']).toBe(true);
  });
});

describe('structural', () => {
  it('turns what it cannot type into preserved JSON and drops additionalProperties: false', () => {
    expect(structural({})).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(structural({ anyOf: [{ type: 'string' }, { type: 'integer' }] })).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(structural({ type: 'object', properties: { a: { const: 'x', type: 'string' } }, additionalProperties: false })).toEqual({
      type: 'object',
      properties: { a: { enum: ['x'], type: 'string' } },
    });
    expect(structural({ type: 'object', additionalProperties: {} })).toEqual({
      type: 'object',
      additionalProperties: { 'x-kubernetes-preserve-unknown-fields': true },
    });
  });
});
