// Golden tests for the pure pipeline: test/golden/translate/<case>.in.yaml -> <case>.out.yaml.
// A <case>.previous.yaml, when present, is run first and its accepted versions become "last accepted".
// UPDATE_GOLDEN=1 rewrites the .out.yaml files.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline, type PipelineOutput } from '../../controller/pipeline.js';
import { parseResources } from '../../controller/source/parse.js';
import type { LegateResource } from '../../controller/api/resources.js';
import type { VirtualHostIR } from '../../controller/translate/ir.js';
import type { RegoCheck } from '../../common/opa-query.js';
import { DEFAULT_RENDER_OPTIONS, type RenderOptions } from '../../controller/translate/render.js';
import { expectGolden, expectRoundTrip } from './golden.js';

const GOLDEN_MODULES: Record<string, string> = {
  '/opt/wasm/add-header.wasm': '09d6004bcdbd28d02daf65bbf94b83b305799ba175ce56927c3e0a72d9266505',
};

// the controller's opa check and Rego analysis (test/unit/extauth-rego-*.test.ts run the real one), by query: other
// policies compile and may read any header
const GOLDEN_REGO: Record<string, ReturnType<RegoCheck>> = {
  'data.golden_team.allow == true': { headers: ['x-team'] },
  'data.golden_broken.allow == true': { error: '1 error occurred: team/policy.rego:3: rego_parse_error: unexpected { token' },
};

// a fixed edge-cache secret (the controller generates one at start), so the wiring shows in the goldens
const RENDER: RenderOptions = {
  ...DEFAULT_RENDER_OPTIONS,
  regoCheck: (_modules, query) => GOLDEN_REGO[query] ?? { headers: '*' },
  wasm: {
    ...DEFAULT_RENDER_OPTIONS.wasm,
    bearerCheck: { ...DEFAULT_RENDER_OPTIONS.wasm.bearerCheck, verifiedValue: 'golden-verified-value-0123456789' },
    // the controller's file reader, for the user's wasm modules the fixtures name by file
    moduleSha256: (file) => GOLDEN_MODULES[file] ?? { error: 'no such file on the controller' },
  },
};

const dir = path.join(import.meta.dirname, 'translate');
const cases = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

function load(file: string) {
  const parsed = parseResources(fs.readFileSync(file, 'utf8'), path.basename(file));
  if (parsed.errors.length) throw new Error(`fixture ${file}: ${parsed.errors.map((e) => e.message).join('; ')}`);
  return parsed.resources;
}

function summarize(out: PipelineOutput): unknown {
  const statuses: Record<string, unknown> = {};
  for (const key of [...out.listed.keys()].sort()) {
    const s = out.listed.get(key)!.status;
    statuses[key] = s.reason ? { state: s.state, reason: s.reason } : { state: s.state };
  }
  const xds: Record<string, unknown> = {};
  for (const role of [...out.xds.keys()].sort()) {
    const snap = out.xds.get(role)!;
    const byType: Record<string, unknown> = {};
    for (const [typeUrl, resources] of snap) byType[typeUrl.split('.').pop()!] = resources.map((r) => r.resource);
    xds[role] = byType;
  }
  return { writeNamespace: out.writeNamespace, statuses, proxies: out.proxies, xds };
}

describe('translation golden files', () => {
  it('has cases', () => expect(cases.length).toBeGreaterThan(10));

  for (const name of cases) {
    it(name, () => {
      const previousFile = path.join(dir, `${name}.previous.yaml`);
      let lastAccepted = new Map<string, LegateResource>();
      let lastServed = new Map<string, VirtualHostIR>();
      if (fs.existsSync(previousFile)) {
        const previous = runPipeline({
          resources: load(previousFile),
          lastAccepted,
          options: { defaultGateway: { bindAddress: '::', bindPort: 8080 }, render: RENDER },
        });
        lastAccepted = previous.accepted;
        lastServed = previous.served;
      }
      const out = runPipeline({
        resources: load(path.join(dir, `${name}.in.yaml`)),
        lastAccepted,
        lastServed,
        options: { defaultGateway: { bindAddress: '::', bindPort: 8080 }, render: RENDER },
      });

      // Every rendered resource must survive protobuf encoding unchanged: catches misspelt fields,
      // which protobufjs would otherwise drop silently.
      for (const snap of out.xds.values()) {
        for (const [typeUrl, resources] of snap) {
          if (!typeUrl.startsWith('type.googleapis.com/envoy.')) continue; // extension configs travel as JSON
          for (const r of resources) {
            expectRoundTrip(typeUrl, r.name, r.resource);
          }
        }
      }

      expectGolden(path.join(dir, `${name}.out.yaml`), summarize(out));
    });
  }
});
