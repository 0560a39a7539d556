// `httpGateway.options.wasm` (Gloo's wasm.proto PluginSource): the user's own proxy-wasm filters on a listener.
// Gloo pulls each module from an OCI image; Legate does not pull images, so a filter names its module by a file
// (filePath: the controller computes its sha256 unless the filter pins one) or an HTTP(S) URL (uri, with its sha256).
import { z } from 'zod';

import { FilterStageSchema, Name, notSupported, protoEnum } from '../../../api/primitives.js';

export const WASM_VM_TYPES = ['V8', 'WAVM'] as const;

/** The Any types Envoy hands a plugin as it is (Struct as JSON text); any other message would reach it as protobuf bytes. */
export const WASM_CONFIG_TYPES = [
  'type.googleapis.com/google.protobuf.StringValue',
  'type.googleapis.com/google.protobuf.BytesValue',
  'type.googleapis.com/google.protobuf.Struct',
] as const;

const WasmConfigSchema = z
  .strictObject({
    '@type': z.enum(WASM_CONFIG_TYPES, { message: `must be one of ${WASM_CONFIG_TYPES.join(', ')}` }),
    value: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  })
  .superRefine((c, ctx) => {
    const struct = c['@type'].endsWith('.Struct');
    const ok = c.value === undefined || (struct ? typeof c.value === 'object' : typeof c.value === 'string');
    if (!ok) ctx.addIssue({ code: 'custom', path: ['value'], message: struct ? 'a Struct value is an object' : 'must be a string' });
    if (c['@type'].endsWith('.BytesValue') && typeof c.value === 'string' && !/^[A-Za-z0-9+/]*={0,2}$/.test(c.value))
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a BytesValue value is base64' });
  });

const WasmFilterSchema = z
  .strictObject({
    image: notSupported(
      'Legate has no OCI registry client to pull a wasm image with: put the .wasm module in a file (filePath) ' +
        'or behind an HTTP(S) URL (uri, with its sha256)',
    ),
    /** Legate: the module on the host where the controller and Envoy run (legate run); its sha256 is checked at translation */
    filePath: z.string().startsWith('/', 'must be an absolute path').optional(),
    /** Legate: Envoy fetches the module from this http:// or https:// URL and checks it against sha256 */
    uri: z.url({ protocol: /^https?$/, message: 'must be an http:// or https:// URL' }).optional(),
    /** Legate: the module's SHA-256, 64 hex digits (`sha256sum filter.wasm`); required with uri, computed for a filePath without it */
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be the 64 hex digits of the module's SHA-256")
      .optional(),
    config: WasmConfigSchema.optional(),
    filterStage: FilterStageSchema.optional(),
    name: Name.optional(),
    rootId: z.string().optional(),
    vmType: protoEnum(WASM_VM_TYPES).optional(),
  })
  .refine((f) => (f.filePath ? 1 : 0) + (f.uri ? 1 : 0) === 1, {
    message: 'set exactly one of filePath, uri (where the module is; Legate does not pull image)',
  })
  .refine((f) => !f.uri || f.sha256, {
    path: ['sha256'],
    message: "required with uri: Envoy checks the module it fetches against this SHA-256 (a filePath's is computed by the controller)",
  });
export type WasmFilter = z.infer<typeof WasmFilterSchema>;

/** `httpGateway.options` fields this feature renders. */
export const wasmHttpListenerOptions = {
  wasm: z.strictObject({ filters: z.array(WasmFilterSchema).optional() }).optional(),
};
