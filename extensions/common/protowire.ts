// A minimal protobuf wire reader for the extension services' hot paths: they decode only the few
// fields they need from Envoy's messages instead of whole messages with proto-loader. One reader is
// reused per service (a parse runs synchronously to completion), so a walk allocates nothing.

export class MalformedProtobuf extends Error {}
const MALFORMED = new MalformedProtobuf('malformed protobuf');
const EMPTY = Buffer.alloc(0);

export class ProtoReader {
  buf: Buffer = EMPTY;
  pos = 0;

  reset(bytes: Buffer = EMPTY): void {
    this.buf = bytes;
    this.pos = 0;
  }

  varint(end: number): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw MALFORMED;
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
    }
    throw MALFORMED;
  }

  /** Skips the value of a field of `wireType`; throws on truncation or group wire types. */
  skip(wireType: number, end: number): void {
    switch (wireType) {
      case 0:
        this.varint(end);
        return;
      case 1:
        this.pos += 8;
        break;
      case 2: {
        const len = this.varint(end); // (not `pos += varint()`: that would add to the pos read before the call)
        this.pos += len;
        break;
      }
      case 5:
        this.pos += 4;
        break;
      default:
        throw MALFORMED;
    }
    if (this.pos > end) throw MALFORMED;
  }

  /** Reads a length prefix and returns the end offset of the delimited value. */
  delimited(end: number): number {
    const len = this.varint(end);
    const e = this.pos + len;
    if (e > end) throw MALFORMED;
    return e;
  }
}
