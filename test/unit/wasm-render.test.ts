// The bearer-check plugin configuration the controller renders (the render golden
// test/golden/render/wasm shows the default one): sharedCache is written only when it is switched off
// (the filter's default is on), and without the edge cache none of the cache fields are written.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_WASM_OPTIONS, type WasmOptions } from '../../controller/translate/features/wasm/index.js';
import { wasmRender } from '../../controller/translate/features/wasm/render.js';
import type { ProxyIR } from '../../controller/translate/ir.js';

const proxy = (parse(fs.readFileSync(path.join(import.meta.dirname, '../golden/render/wasm.in.yaml'), 'utf8')) as { proxy: ProxyIR }).proxy;

function bearerConfiguration(bearerCheck: Partial<WasmOptions['bearerCheck']>): Record<string, unknown> {
  const options: WasmOptions = {
    ...DEFAULT_WASM_OPTIONS,
    bearerCheck: { ...DEFAULT_WASM_OPTIONS.bearerCheck, verifiedValue: 'unit-verified-value-0123456789', ...bearerCheck },
  };
  const filters = wasmRender(options).httpFilters!(proxy, proxy.listeners[0]!);
  const bearer = filters.find((f) => f.filter.name === 'legate.bearer_check');
  const config = (bearer?.filter.typed_config as { config?: { configuration?: { value?: string } } } | undefined)?.config;
  return JSON.parse(config?.configuration?.value ?? 'null') as Record<string, unknown>;
}

describe('bearer-check plugin configuration', () => {
  it('leaves sharedCache to the filter default (on) unless it is switched off', () => {
    expect(bearerConfiguration({})).not.toHaveProperty('sharedCache');
    expect(bearerConfiguration({ sharedCache: true })).not.toHaveProperty('sharedCache');
    expect(bearerConfiguration({ sharedCache: false })).toMatchObject({ cacheEntries: 4096, sharedCache: false });
  });

  it('writes no cache fields with the edge cache off', () => {
    expect(bearerConfiguration({ cacheEntries: 0, sharedCache: false })).toEqual({ maxTokenBytes: 4096 });
  });
});
