// What incremental-pipeline.test.ts and incremental-delegation-property.test.ts share: a pipeline run
// twice, once from the last accepted versions only (as the golden tests do) and once with the previous
// run's memo (as the controller does), and every observable part of a run as plain data to compare.
import { ExtensionTypeUrls, encodeExtensionConfig } from '../../common/contract.js';
import type { RawResource } from '../../controller/api/meta.js';
import type { LegateResource } from '../../controller/api/resources.js';
import { runPipeline, type PipelineMemo, type PipelineOutput } from '../../controller/pipeline.js';
import { parseResources } from '../../controller/source/parse.js';
import type { VirtualHostIR } from '../../controller/translate/ir.js';
import { SnapshotCache } from '../../controller/xds/cache.js';

export function parseOne(text: string): RawResource {
  const parsed = parseResources(text, 'edit.yaml');
  if (parsed.errors.length || parsed.resources.length !== 1) throw new Error(`bad fixture: ${JSON.stringify(parsed.errors)}`);
  return parsed.resources[0]!;
}

export const upstream = (name: string, port: number): string => `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: ${name}, namespace: legate-system }
spec: { static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] } }
`;

/** Every observable part of a run, as plain data. */
export function summary(out: PipelineOutput): unknown {
  const listed = [...out.listed].map(([key, { resource, status }]) => [key, resource.origin, status]);
  const xds = [...out.xds].map(([role, snap]) => [role, [...snap].map(([t, rs]) => [t, rs.map((r) => [r.name, r.resource])])]);
  const accepted = [...out.accepted].map(([key, r]) => [key, r.spec]);
  const served = [...out.served].map(([key, vh]) => [key, vh]);
  return { ns: out.writeNamespace, listed, proxies: out.proxies, xds, accepted, reports: out.reports, served, names: [...out.envoyNames] };
}

/** What a cache serves: per role and type, the version and every resource's Any bytes. */
export function served(cache: SnapshotCache): unknown {
  return cache
    .roles()
    .map((role) => [
      role,
      [...cache.get(role)!.types.values()].map((t) => [t.typeUrl, t.version, t.resources.map((r) => [r.name, r.any.toString('base64')])]),
    ]);
}

export class Runner {
  lastAccepted = new Map<string, LegateResource>();
  lastServed = new Map<string, VirtualHostIR>();
  memo: PipelineMemo | undefined;
  // extension configs travel as JSON, as the controller sends them
  readonly cache = new SnapshotCache({
    encoders: Object.fromEntries(Object.values(ExtensionTypeUrls).map((t) => [t, (_: string, r: object) => encodeExtensionConfig(r)])),
  });
  constructor(private readonly incremental: boolean) {}

  run(resources: RawResource[]): PipelineOutput {
    const out = runPipeline({
      resources,
      lastAccepted: this.lastAccepted,
      lastServed: this.lastServed,
      ...(this.incremental && this.memo ? { memo: this.memo } : {}),
      options: { defaultGateway: { bindAddress: '::', bindPort: 8080 } },
    });
    this.lastAccepted = out.accepted;
    this.lastServed = out.served;
    this.memo = out.memo;
    for (const [role, snap] of out.xds) this.cache.set(role, snap);
    return out;
  }
}
