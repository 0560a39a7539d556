// A strict reader for the filters' JSON configuration objects (RFC 8259): one flat object whose members
// the filter asks for by type. No tree is built; errors carry a message a person can act on.
//
//   const r = new JsonObjectReader(ptr, len);
//   if (!r.begin()) ...r.error
//   let key: string | null;
//   while ((key = r.nextKey()) !== null) { if (key == "x") v = r.readInteger("x", 1, 10); else r.unknownField(key); }
//   if (!r.end()) ...r.error

function isWs(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

function isDigit(c: u32): bool {
  return c >= 0x30 && c <= 0x39;
}

function hexValue(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>(c - 0x30);
  if (c >= 0x61 && c <= 0x66) return <i32>(c - 0x61 + 10);
  if (c >= 0x41 && c <= 0x46) return <i32>(c - 0x41 + 10);
  return -1;
}

export class JsonObjectReader {
  private pos: usize = 0;
  private first: bool = true;
  private closed: bool = false;
  /** The first error, or null. Once set, every method returns a failure. */
  error: string | null = null;

  constructor(private ptr: usize, private len: usize) {}

  /** True when the input is empty or whitespace only (the filters then use their defaults). */
  isBlank(): bool {
    for (let i: usize = 0; i < this.len; i++) if (!isWs(this.at(i))) return false;
    return true;
  }

  /** Expects the opening `{`. */
  begin(): bool {
    this.skipWs();
    if (this.pos >= this.len || this.at(this.pos) != 0x7b) {
      return this.fail("the configuration must be a JSON object, " + this.describeHere());
    }
    this.pos++;
    return true;
  }

  /** The next member's name (positioned on its value), or null at the closing `}` or on error. */
  nextKey(): string | null {
    if (this.error !== null || this.closed) return null;
    this.skipWs();
    if (this.pos < this.len && this.at(this.pos) == 0x7d && this.first) {
      this.pos++;
      this.closed = true;
      return null;
    }
    if (!this.first) {
      if (this.pos < this.len && this.at(this.pos) == 0x7d) {
        this.pos++;
        this.closed = true;
        return null;
      }
      if (this.pos >= this.len || this.at(this.pos) != 0x2c) {
        this.fail("invalid JSON: expected ',' or '}' " + this.describeHere());
        return null;
      }
      this.pos++;
      this.skipWs();
    }
    this.first = false;
    if (this.pos >= this.len || this.at(this.pos) != 0x22) {
      this.fail("invalid JSON: expected a member name (a string) " + this.describeHere());
      return null;
    }
    const key = this.readString();
    if (key === null) return null;
    this.skipWs();
    if (this.pos >= this.len || this.at(this.pos) != 0x3a) {
      this.fail("invalid JSON: expected ':' " + this.describeHere());
      return null;
    }
    this.pos++;
    this.skipWs();
    return key;
  }

  /** After the object closed: only whitespace may follow. */
  end(): bool {
    if (this.error !== null) return false;
    if (!this.closed) return this.fail("invalid JSON: the object is not closed");
    this.skipWs();
    if (this.pos < this.len) return this.fail("invalid JSON: unexpected data after the object " + this.describeHere());
    return true;
  }

  unknownField(name: string): void {
    this.fail("unknown field \"" + name + "\"");
  }

  duplicateField(name: string): void {
    this.fail("duplicate field \"" + name + "\"");
  }

  readBoolean(field: string): bool {
    if (this.error !== null) return false;
    if (this.matchLiteral("true")) return true;
    if (this.matchLiteral("false")) return false;
    this.fail("\"" + field + "\" must be a boolean, got " + this.describeValue());
    return false;
  }

  /** A string (JSON escapes decoded). */
  readStringValue(field: string): string {
    if (this.error !== null) return "";
    if (this.pos >= this.len || this.at(this.pos) != 0x22) {
      this.fail("\"" + field + "\" must be a string, got " + this.describeValue());
      return "";
    }
    const s = this.readString();
    return s !== null ? s : "";
  }

  /** An integer in [min, max] (a JSON number with an integral value, e.g. 4096 or 4096.0 or 4e3). */
  readInteger(field: string, min: i64, max: i64): i64 {
    if (this.error !== null) return 0;
    const c = this.pos < this.len ? this.at(this.pos) : 0;
    if (!(c == 0x2d || isDigit(c))) {
      this.fail("\"" + field + "\" must be an integer, got " + this.describeValue());
      return 0;
    }
    const start = this.pos;
    if (!this.scanNumber()) return 0;
    if (this.pos < this.len) {
      const next = this.at(this.pos);
      if (!isWs(next) && next != 0x2c && next != 0x7d) {
        this.fail("invalid JSON: bad number " + this.describeHere());
        return 0;
      }
    }
    const text = String.UTF8.decodeUnsafe(this.ptr + start, this.pos - start);
    const value = parseFloat(text);
    if (!isFinite(value) || value != Math.floor(value)) {
      this.fail("\"" + field + "\" must be an integer, got " + text);
      return 0;
    }
    if (value < <f64>min || value > <f64>max) {
      this.fail("\"" + field + "\" must be between " + min.toString() + " and " + max.toString() + ", got " + text);
      return 0;
    }
    return <i64>value;
  }

  // ------------------------------------------------------------------------------------------ internal

  private fail(message: string): bool {
    if (this.error === null) this.error = message;
    return false;
  }

  // @ts-ignore: decorator
  @inline private at(i: usize): u32 {
    return <u32>load<u8>(this.ptr + i);
  }

  private skipWs(): void {
    while (this.pos < this.len && isWs(this.at(this.pos))) this.pos++;
  }

  private describeHere(): string {
    if (this.pos >= this.len) return "at the end of the input";
    const c = this.at(this.pos);
    const shown = c >= 0x20 && c < 0x7f ? "'" + String.fromCharCode(<i32>c) + "'" : "byte 0x" + c.toString(16);
    return "at offset " + this.pos.toString() + " (found " + shown + ")";
  }

  private describeValue(): string {
    if (this.pos >= this.len) return "nothing";
    const c = this.at(this.pos);
    if (c == 0x22) return "a string";
    if (c == 0x7b) return "an object";
    if (c == 0x5b) return "an array";
    if (c == 0x74 || c == 0x66) return "a boolean";
    if (c == 0x6e) return "null";
    if (c == 0x2d || isDigit(c)) return "a number";
    return "invalid JSON " + this.describeHere();
  }

  private matchLiteral(word: string): bool {
    const n = <usize>word.length;
    if (this.pos + n > this.len) return false;
    for (let i: usize = 0; i < n; i++) {
      if (this.at(this.pos + i) != <u32>word.charCodeAt(<i32>i)) return false;
    }
    this.pos += n;
    return true;
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
  private scanNumber(): bool {
    if (this.at(this.pos) == 0x2d) this.pos++;
    if (this.pos >= this.len || !isDigit(this.at(this.pos))) return this.fail("invalid JSON: bad number " + this.describeHere());
    if (this.at(this.pos) == 0x30) this.pos++;
    else while (this.pos < this.len && isDigit(this.at(this.pos))) this.pos++;
    if (this.pos < this.len && this.at(this.pos) == 0x2e) {
      this.pos++;
      if (this.pos >= this.len || !isDigit(this.at(this.pos))) return this.fail("invalid JSON: bad number " + this.describeHere());
      while (this.pos < this.len && isDigit(this.at(this.pos))) this.pos++;
    }
    if (this.pos < this.len && (this.at(this.pos) | 0x20) == 0x65) {
      this.pos++;
      if (this.pos < this.len && (this.at(this.pos) == 0x2b || this.at(this.pos) == 0x2d)) this.pos++;
      if (this.pos >= this.len || !isDigit(this.at(this.pos))) return this.fail("invalid JSON: bad number " + this.describeHere());
      while (this.pos < this.len && isDigit(this.at(this.pos))) this.pos++;
    }
    return true;
  }

  /** A JSON string starting at the opening quote; null on error. */
  private readString(): string | null {
    this.pos++; // opening quote
    let out = "";
    let runStart = this.pos;
    while (true) {
      if (this.pos >= this.len) {
        this.fail("invalid JSON: unterminated string");
        return null;
      }
      const c = this.at(this.pos);
      if (c == 0x22) {
        out += String.UTF8.decodeUnsafe(this.ptr + runStart, this.pos - runStart);
        this.pos++;
        return out;
      }
      if (c < 0x20) {
        this.fail("invalid JSON: control character in a string " + this.describeHere());
        return null;
      }
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      out += String.UTF8.decodeUnsafe(this.ptr + runStart, this.pos - runStart);
      this.pos++;
      if (this.pos >= this.len) {
        this.fail("invalid JSON: unterminated string");
        return null;
      }
      const e = this.at(this.pos);
      this.pos++;
      if (e == 0x22) out += "\"";
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        let code = 0;
        for (let i = 0; i < 4; i++) {
          const h = this.pos < this.len ? hexValue(this.at(this.pos)) : -1;
          if (h < 0) {
            this.fail("invalid JSON: bad \\u escape " + this.describeHere());
            return null;
          }
          code = (code << 4) | h;
          this.pos++;
        }
        out += String.fromCharCode(code);
      } else {
        this.pos--;
        this.fail("invalid JSON: bad escape " + this.describeHere());
        return null;
      }
      runStart = this.pos;
    }
  }
}

/** `s` as a JSON string literal (quotes included), escaped as JSON.stringify does: `"`, `\` and
 * control characters below U+0020; everything else as is. */
export function jsonQuote(s: string): string {
  let out = "\"";
  let runStart = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(runStart, i);
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else if (c == 0x08) out += "\\b";
    else if (c == 0x0c) out += "\\f";
    else out += "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    runStart = i + 1;
  }
  out += s.substring(runStart);
  return out + "\"";
}
