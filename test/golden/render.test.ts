// Golden tests for stage 2 alone: a hand-written IR (test/golden/render/<case>.in.yaml: `proxy`, a
// ProxyIR; `upstreams`, UpstreamIR[]; optionally `features`, the names of the features whose render
// plugins run, default all; optionally `render`, render options) -> <case>.out.yaml, the xDS resources
// by type. A case per feature shows what that feature adds on its own. UPDATE_GOLDEN=1 rewrites the .out.yaml files.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_RENDER_OPTIONS, features, type RenderOptions } from '../../controller/translate/features/index.js';
import type { ExtProcFilterOptions } from '../../controller/translate/features/extproc/index.js';
import type { ProxyIR, UpstreamIR } from '../../controller/translate/ir.js';
import { renderPlugins, renderProxy } from '../../controller/translate/render.js';
import { expectGolden, expectRoundTrip } from './golden.js';

const RENDER: RenderOptions = {
  ...DEFAULT_RENDER_OPTIONS,
  wasm: {
    ...DEFAULT_RENDER_OPTIONS.wasm,
    bearerCheck: { ...DEFAULT_RENDER_OPTIONS.wasm.bearerCheck, verifiedValue: 'golden-verified-value-0123456789' },
  },
};

interface RenderCase {
  features?: string[];
  /** the Settings' ext_proc filter (render options) */
  extProc?: ExtProcFilterOptions;
  proxy: ProxyIR;
  upstreams?: UpstreamIR[];
  /** render options besides the defaults (e.g. namedExtauth, which the pipeline takes from Settings) */
  render?: Partial<RenderOptions>;
}

const dir = path.join(import.meta.dirname, 'render');
const cases = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();

describe('render golden files (IR -> xDS)', () => {
  it('has a case per feature', () => {
    const covered = new Set(
      cases.flatMap((c) => (parse(fs.readFileSync(path.join(dir, `${c}.in.yaml`), 'utf8')) as RenderCase).features ?? []),
    );
    for (const f of features(RENDER)) expect(covered, `a case that renders only with ${f.name}`).toContain(f.name);
  });

  for (const name of cases) {
    it(name, () => {
      const input = parse(fs.readFileSync(path.join(dir, `${name}.in.yaml`), 'utf8')) as RenderCase;
      const all = features({ ...RENDER, ...input.render, ...(input.extProc ? { extProc: input.extProc } : {}) });
      const unknown = (input.features ?? []).filter((n) => !all.some((f) => f.name === n));
      expect(unknown, 'feature names in the case').toEqual([]);
      const chosen = input.features ? all.filter((f) => input.features?.includes(f.name)) : all;
      const snapshot = renderProxy(input.proxy, input.upstreams ?? [], renderPlugins(chosen));

      const byType: Record<string, unknown> = {};
      for (const [typeUrl, resources] of snapshot) {
        for (const r of resources) {
          expectRoundTrip(typeUrl, r.name, r.resource);
        }
        byType[typeUrl.split('.').pop() ?? typeUrl] = resources.map((r) => r.resource);
      }
      expectGolden(path.join(dir, `${name}.out.yaml`), byType);
    });
  }
});
