// Encoding Envoy resources for the snapshot cache. A RouteConfiguration with many virtual hosts is
// encoded as its parts: protobuf writes a message's fields in field-number order and a repeated
// message field as one (tag, length, bytes) record per element, so a RouteConfiguration is the bytes
// of its `name` (field 1), then one record per virtual host (field 2), then the bytes of every other
// field (numbers above 2), exactly as encoding it whole gives. Each virtual host's bytes are kept by
// the identity of its object (the snapshot cache's resources are never mutated, and stage 2 hands back
// the same object for a virtual host that did not change), so an edit of one virtual host encodes that
// one and copies the others.
import protobuf from 'protobufjs';
import { TypeUrls, encodeAny, encodeMessage, envoyType } from '../../envoy/protos.js';

/** Turns one resource (JSON shape) into the bytes of its protobuf message (the Any's `value`). */
export type ResourceEncoder = (typeUrl: string, resource: object) => Uint8Array;

const VIRTUAL_HOST = 'envoy.config.route.v3.VirtualHost';

/** Whether RouteConfiguration's field numbers are as the splicing assumes (name 1, virtual_hosts 2, the rest above). */
function routeConfigurationSplits(): boolean {
  const type = envoyType(TypeUrls.route);
  const name = type.fields['name'];
  const vhosts = type.fields['virtual_hosts'];
  if (!name || !vhosts || !vhosts.repeated || name.id >= vhosts.id) return false;
  return type.fieldsArray.every((f) => f === name || f === vhosts || f.id > vhosts.id);
}

/**
 * The default encoder of a snapshot cache: encodeAny, with RouteConfigurations encoded per virtual
 * host and the virtual hosts' bytes reused by object identity. One per cache (its memory is the cache's).
 */
export function envoyEncoder(): ResourceEncoder {
  const virtualHosts = new WeakMap<object, Uint8Array>();
  let splits: boolean | undefined;
  return (typeUrl, resource) => {
    if (typeUrl !== TypeUrls.route) return encodeAny(typeUrl, resource).value;
    splits ??= routeConfigurationSplits();
    const { name, virtual_hosts: vhosts, ...rest } = resource as { name?: unknown; virtual_hosts?: unknown };
    if (!splits || !Array.isArray(vhosts)) return encodeAny(typeUrl, resource).value;
    const w = protobuf.Writer.create();
    const head = name === undefined ? undefined : encodeMessage(typeUrl, { name });
    for (const vh of vhosts as unknown[]) {
      if (typeof vh !== 'object' || vh === null) return encodeAny(typeUrl, resource).value;
      let bytes = virtualHosts.get(vh);
      if (!bytes) {
        bytes = encodeMessage(VIRTUAL_HOST, vh);
        virtualHosts.set(vh, bytes);
      }
      w.uint32(18).bytes(bytes); // field 2, length-delimited
    }
    const body = w.finish();
    const tail = encodeMessage(typeUrl, rest);
    const out = Buffer.allocUnsafe((head?.length ?? 0) + body.length + tail.length);
    let at = 0;
    if (head) {
      out.set(head, 0);
      at = head.length;
    }
    out.set(body, at);
    out.set(tail, at + body.length);
    return out;
  };
}
