// Gloo's GrpcJsonTranscoder (a Gateway's httpGateway.options, or an Upstream's serviceSpec) -> its IR, its descriptor
// read from a ConfigMap when it names one, and the Envoy filter config; shared by the hcm and upstreams features.
import type { GrpcJsonTranscoder } from '../api/primitives.js';
import type { ConfigMap } from '../api/resources.js';
import type { GrpcJsonTranscoder as GrpcJsonTranscoderConfig } from '../../envoy/typed.js';
import type { Problem } from './feature.js';
import type { GrpcJsonTranscoderIR } from './ir.js';
import { nsName } from './names.js';

/** The base64 FileDescriptorSet of protoDescriptorConfigMap (Gloo reads `data`; `binaryData` is base64 already). */
function descriptorFromConfigMap(
  ref: NonNullable<GrpcJsonTranscoder['protoDescriptorConfigMap']>,
  namespace: string,
  configMaps: ReadonlyMap<string, ConfigMap>,
  where: string,
  problems: Problem[],
): string | undefined {
  const ns = ref.configMapRef.namespace || namespace;
  const cm = configMaps.get(nsName(ns, ref.configMapRef.name));
  const name = `ConfigMap ${ns}.${ref.configMapRef.name}`;
  if (!cm) {
    problems.push({ code: 'ConfigMapNotFound', message: `${where}.configMapRef: ${name} not found` });
    return undefined;
  }
  const entries = { ...(cm.spec.binaryData ?? {}), ...(cm.spec.data ?? {}) };
  const keys = Object.keys(entries);
  let key = ref.key;
  if (!key) {
    if (keys.length !== 1) {
      const what = keys.length ? `has ${keys.length} keys (${keys.join(', ')})` : 'has no data';
      problems.push({ code: 'InvalidSpec', message: `${where}: ${name} ${what}; name the descriptor's with key` });
      return undefined;
    }
    key = keys[0]!;
  }
  const value = entries[key]?.replace(/\s+/g, '');
  if (value === undefined) {
    problems.push({ code: 'InvalidSpec', message: `${where}.key: ${name} has no key ${key}` });
    return undefined;
  }
  if (!value || !/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) {
    problems.push({ code: 'InvalidSpec', message: `${where}: ${name} key ${key} is not a base64 FileDescriptorSet` });
    return undefined;
  }
  return value;
}

/** The transcoder's IR; undefined when its ConfigMap descriptor cannot be read (the problem says why). */
export function resolveTranscoder(
  t: GrpcJsonTranscoder,
  where: string,
  namespace: string,
  configMaps: ReadonlyMap<string, ConfigMap>,
  problems: Problem[],
): GrpcJsonTranscoderIR | undefined {
  const { protoDescriptor, protoDescriptorBin, protoDescriptorConfigMap, services, ignoredQueryParameters, ...flags } = t;
  let base64 = protoDescriptorBin;
  if (protoDescriptorConfigMap) {
    base64 = descriptorFromConfigMap(protoDescriptorConfigMap, namespace, configMaps, `${where}.protoDescriptorConfigMap`, problems);
    if (base64 === undefined) return undefined;
  }
  return {
    descriptor: protoDescriptor !== undefined ? { filename: protoDescriptor } : { base64: base64 ?? '' },
    services,
    ignoredQueryParameters: ignoredQueryParameters ?? [],
    ...flags,
  };
}

/** Envoy's GrpcJsonTranscoder config of the IR. */
export function transcoderConfig(t: GrpcJsonTranscoderIR): GrpcJsonTranscoderConfig {
  const p = t.printOptions;
  return {
    ...('filename' in t.descriptor ? { proto_descriptor: t.descriptor.filename } : { proto_descriptor_bin: t.descriptor.base64 }),
    services: t.services,
    ...(p
      ? {
          print_options: {
            ...(p.addWhitespace ? { add_whitespace: true } : {}),
            ...(p.alwaysPrintPrimitiveFields ? { always_print_primitive_fields: true } : {}),
            ...(p.alwaysPrintEnumsAsInts ? { always_print_enums_as_ints: true } : {}),
            ...(p.preserveProtoFieldNames ? { preserve_proto_field_names: true } : {}),
          },
        }
      : {}),
    ...(t.matchIncomingRequestRoute ? { match_incoming_request_route: true } : {}),
    ...(t.ignoredQueryParameters.length ? { ignored_query_parameters: t.ignoredQueryParameters } : {}),
    ...(t.autoMapping ? { auto_mapping: true } : {}),
    ...(t.ignoreUnknownQueryParameters ? { ignore_unknown_query_parameters: true } : {}),
    ...(t.convertGrpcStatus ? { convert_grpc_status: true } : {}),
  };
}
