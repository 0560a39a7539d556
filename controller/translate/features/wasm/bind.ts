// `httpGateway.options.wasm.filters` -> the listener's WasmFilterIR. A module named by file is checked against its
// sha256 here (a mismatch rejects the Gateway, whose last accepted version keeps serving), or, without one (as Gloo's
// manifests have none), read and its digest kept in the IR (the Proxy shows which module it serves); one named by URL
// is checked by Envoy when it fetches it (Envoy's remote data source takes the sha256).
import type { Gateway } from '../../../api/resources.js';
import { enumName, glooFilterPosition, type BindSink } from '../../feature.js';
import type { WasmFilterIR } from '../../ir.js';
import { WASM_VM_TYPES, type WasmFilter } from './schema.js';

/**
 * Where the filter goes. Gloo's default is before its AcceptedStage: after authentication, authorization and rate
 * limiting (a user's filter sees only requests those let through, and cannot change what they judge), before Legate's
 * GraphQL processing and the router.
 */
function position(stage: WasmFilter['filterStage']): WasmFilterIR['position'] {
  return stage ? glooFilterPosition(stage) : { stage: 'Processing', side: 'before' };
}

function configuration(config: WasmFilter['config']): WasmFilterIR['configuration'] {
  if (!config || config.value === undefined) return undefined;
  const v = config.value;
  if (config['@type'].endsWith('.BytesValue')) return { type: 'bytes', base64: typeof v === 'string' ? v : '' };
  // Envoy hands the plugin a Struct as JSON text
  return { type: 'string', value: typeof v === 'string' ? v : JSON.stringify(v) };
}

export function bindUserWasm(
  gw: Gateway,
  moduleSha256: ((file: string) => string | { error: string }) | undefined,
  sink: BindSink,
): WasmFilterIR[] | undefined {
  const filters = gw.spec.httpGateway?.options?.wasm?.filters;
  if (!filters?.length) return undefined;
  const out: WasmFilterIR[] = [];
  const names = new Set<string>();
  filters.forEach((f, i) => {
    const at = `httpGateway.options.wasm.filters[${i}]`;
    const before = sink.problems.length;
    const vm = enumName(WASM_VM_TYPES, f.vmType) ?? 'V8';
    if (vm !== 'V8')
      sink.problems.push({
        code: 'NotSupported',
        message: `${at}.vmType: Envoy 1.40 has no ${vm} runtime (it runs modules in V8, the default); use V8`,
      });
    const name = f.name ?? `filter-${i}`;
    if (names.has(name))
      sink.problems.push({ code: 'InvalidSpec', message: `${at}.name: ${JSON.stringify(name)} names another filter of this listener` });
    names.add(name);
    let sha256 = f.sha256?.toLowerCase() ?? '';
    let code: WasmFilterIR['code'];
    if (f.filePath !== undefined) {
      const got = moduleSha256?.(f.filePath);
      if (got === undefined) {
        const what = f.sha256 ? 'checked against sha256' : 'read for its SHA-256';
        sink.warnings.push({
          code: 'InvalidSpec',
          message: `${at}.filePath: ${f.filePath} is not ${what} here (no access to the file); Envoy loads it as it is`,
        });
      } else if (typeof got !== 'string') {
        sink.problems.push({ code: 'InvalidSpec', message: `${at}.filePath: ${f.filePath}: ${got.error}` });
      } else if (!f.sha256) {
        // the module as read now: the Proxy resource shows its digest
        sha256 = got;
      } else if (got !== sha256) {
        sink.problems.push({
          code: 'InvalidSpec',
          message:
            `${at}.sha256: ${f.filePath} has SHA-256 ${got}, not the ${sha256} pinned here; ` +
            'Envoy is not given a module other than the pinned one',
        });
      }
      code = { filename: f.filePath };
    } else {
      const url = new URL(f.uri ?? '');
      const tls = url.protocol === 'https:';
      const port = url.port ? Number(url.port) : tls ? 443 : 80;
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      code = { uri: url.href, cluster: `legate-wasm-${host}-${port}${tls ? '-tls' : ''}`, host, port, tls };
    }
    if (sink.problems.length > before) return;
    const config = configuration(f.config);
    out.push({
      name: `envoy.filters.http.wasm.${name}`,
      pluginName: name,
      rootId: f.rootId ?? '',
      code,
      sha256,
      ...(config ? { configuration: config } : {}),
      position: position(f.filterStage),
    });
  });
  return out;
}
