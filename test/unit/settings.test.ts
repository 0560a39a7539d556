// Settings semantics that a single golden run cannot show: a write namespace changed while running waits for a
// restart (the proxies' node ids name the first one) and says so on the Settings; Kubernetes label selectors
// (watchNamespaceSelectors) match as the API server's do.
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../controller/pipeline.js';
import { parseResources } from '../../controller/source/parse.js';
import { labelsMatch } from '../../controller/source/kubernetes/source.js';

const resources = (namespace: string) => {
  const parsed = parseResources(
    `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: ${namespace} }
spec: { discoveryNamespace: ${namespace} }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: web, namespace: default }
spec:
  virtualHost:
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200, body: ok } }]
`,
    'settings.yaml',
  );
  expect(parsed.errors).toEqual([]);
  return parsed.resources;
};

describe('Settings write namespace while running', () => {
  it('the first run takes the Settings namespace', () => {
    const out = runPipeline({ resources: resources('gloo-system'), lastAccepted: new Map() });
    expect(out.writeNamespace).toBe('gloo-system');
    expect([...out.xds.keys()].filter((r) => r.includes('~'))).toEqual(['gloo-system~gateway-proxy']);
    expect(out.listed.get('Settings/gloo-system/default')?.status.state).toBe('Accepted');
  });

  it('a changed namespace keeps serving the running role, with a warning that a restart applies it', () => {
    const out = runPipeline({
      resources: resources('team-a'),
      lastAccepted: new Map(),
      options: { runningWriteNamespace: 'gloo-system' },
    });
    expect(out.writeNamespace).toBe('gloo-system');
    expect([...out.xds.keys()].filter((r) => r.includes('~'))).toEqual(['gloo-system~gateway-proxy']);
    const status = out.listed.get('Settings/team-a/default')?.status;
    expect(status?.state).toBe('Warning');
    expect(status?.reason).toContain('the write namespace team-a (discoveryNamespace/writeNamespace) takes effect when the controller');
    // the VirtualService is served, not left behind under a role no proxy asks for
    expect(out.listed.get('VirtualService/default/web')?.status.state).toBe('Accepted');
  });
});

describe('watchNamespaceSelectors label matching', () => {
  const labels = { env: 'prod', region: 'us-east1', app: 'spark' };
  it('matchLabels: every pair', () => {
    expect(labelsMatch({ matchLabels: { env: 'prod', region: 'us-east1' } }, labels)).toBe(true);
    expect(labelsMatch({ matchLabels: { env: 'prod', region: 'eu' } }, labels)).toBe(false);
  });
  it('matchExpressions: In, NotIn, Exists, DoesNotExist', () => {
    expect(labelsMatch({ matchExpressions: [{ key: 'app', operator: 'In', values: ['cassandra', 'spark'] }] }, labels)).toBe(true);
    expect(labelsMatch({ matchExpressions: [{ key: 'app', operator: 'In', values: ['cassandra'] }] }, labels)).toBe(false);
    expect(labelsMatch({ matchExpressions: [{ key: 'missing', operator: 'In', values: [''] }] }, labels)).toBe(false);
    expect(labelsMatch({ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['spark'] }] }, labels)).toBe(false);
    expect(labelsMatch({ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, labels)).toBe(true);
    expect(labelsMatch({ matchExpressions: [{ key: 'env', operator: 'Exists' }] }, labels)).toBe(true);
    expect(labelsMatch({ matchExpressions: [{ key: 'env', operator: 'DoesNotExist' }] }, labels)).toBe(false);
  });
  it('an empty selector matches everything, as in Kubernetes', () => {
    expect(labelsMatch({}, {})).toBe(true);
  });
});
