// Which operation a GraphQL document selects, and whether it is a mutation, found with a lexer-level
// scan of the top level (no parse tree). The selection follows graphql-js getOperationAST: with an
// operationName, the first operation of that name; without, the only operation (none if several).
//
// Lexing per the GraphQL spec (October 2021): ignored tokens are whitespace, line terminators, commas,
// the BOM and `#` comments; strings "…" (with `\` escapes, no line terminators) and block strings
// """…""" (with `\"""`) are skipped whole, so braces and keywords inside them do not count. At nesting
// depth 0 a definition starts with `query`, `mutation`, `subscription` (then an optional name),
// `fragment`, or `{` (a shorthand query), and ends at the `}` that brings the depth back to 0.
//
// Anything else (type-system definitions, bytes that are not GraphQL, unbalanced brackets, unterminated
// strings) makes the scan give up and report "not a mutation": the request goes on and the GraphQL
// service answers it with its own error. Only a document that clearly selects a mutation is refused.

const OP_QUERY = 0;
const OP_MUTATION = 1;
const OP_SUBSCRIPTION = 2;
const FRAGMENT = 3;

const PHASE_NONE = 0; // between definitions
const PHASE_AFTER_KEYWORD = 1; // right after query/mutation/subscription
const PHASE_IN_DEFINITION = 2;

const TOKEN_NAME = 0;
const TOKEN_OPEN_BRACE = 1;
const TOKEN_CLOSE_BRACE = 2;
const TOKEN_OTHER = 3;

function isNameStart(c: u32): bool {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c == 0x5f;
}

function isNameContinue(c: u32): bool {
  return isNameStart(c) || (c >= 0x30 && c <= 0x39);
}

function bytesEqualAt(a: usize, alen: usize, b: usize, blen: usize): bool {
  if (alen != blen) return false;
  return memory.compare(a, b, alen) == 0;
}

function keyword(ptr: usize, len: usize, word: string): bool {
  if (len != <usize>word.length) return false;
  for (let i: usize = 0; i < len; i++) {
    if (<u32>load<u8>(ptr + i) != <u32>word.charCodeAt(<i32>i)) return false;
  }
  return true;
}

/**
 * True when the document at `[doc, doc+len)` selects a mutation. `opName`/`opNameLen` is the requested
 * operationName (used when `hasOpName`).
 */
export function selectsMutation(doc: usize, len: usize, hasOpName: bool, opName: usize, opNameLen: usize): bool {
  let depth = 0;
  let phase = PHASE_NONE;
  let currentType = -1;
  let operations = 0;
  let firstType = -1;
  let matchedType = -1;
  let i: usize = 0;

  while (i < len) {
    const c = <u32>load<u8>(doc + i);
    // ignored tokens
    if (c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d || c == 0x2c) {
      i++;
      continue;
    }
    if (c == 0xef && i + 2 < len && <u32>load<u8>(doc + i + 1) == 0xbb && <u32>load<u8>(doc + i + 2) == 0xbf) {
      i += 3; // BOM
      continue;
    }
    if (c == 0x23) { // '#' comment to the end of the line
      while (i < len && <u32>load<u8>(doc + i) != 0x0a && <u32>load<u8>(doc + i) != 0x0d) i++;
      continue;
    }

    let token = TOKEN_OTHER;
    let nameStart: usize = 0;
    let nameLen: usize = 0;
    if (c == 0x22) { // '"'
      if (i + 2 < len && <u32>load<u8>(doc + i + 1) == 0x22 && <u32>load<u8>(doc + i + 2) == 0x22) {
        i += 3; // block string: up to the next """ that is not escaped as \"""
        let closed = false;
        while (i < len) {
          const b = <u32>load<u8>(doc + i);
          if (b == 0x5c && i + 3 < len && <u32>load<u8>(doc + i + 1) == 0x22 && <u32>load<u8>(doc + i + 2) == 0x22 && <u32>load<u8>(doc + i + 3) == 0x22) {
            i += 4;
          } else if (b == 0x22 && i + 2 < len && <u32>load<u8>(doc + i + 1) == 0x22 && <u32>load<u8>(doc + i + 2) == 0x22) {
            i += 3;
            closed = true;
            break;
          } else {
            i++;
          }
        }
        if (!closed) return false;
      } else {
        i++;
        let closed = false;
        while (i < len) {
          const b = <u32>load<u8>(doc + i);
          if (b == 0x5c) {
            i += 2;
          } else if (b == 0x22) {
            i++;
            closed = true;
            break;
          } else if (b == 0x0a || b == 0x0d) {
            return false; // line terminator in a string: not a valid document
          } else {
            i++;
          }
        }
        if (!closed) return false;
      }
    } else if (isNameStart(c)) {
      nameStart = i;
      i++;
      while (i < len && isNameContinue(<u32>load<u8>(doc + i))) i++;
      nameLen = i - nameStart;
      token = TOKEN_NAME;
    } else if ((c >= 0x30 && c <= 0x39) || c == 0x2d) { // numbers (only inside arguments in valid documents)
      i++;
      while (i < len) {
        const b = <u32>load<u8>(doc + i);
        if (isNameContinue(b) || b == 0x2e || b == 0x2b || b == 0x2d) i++;
        else break;
      }
    } else if (c == 0x7b) { // {
      depth++;
      i++;
      token = TOKEN_OPEN_BRACE;
    } else if (c == 0x28 || c == 0x5b) { // ( [
      depth++;
      i++;
    } else if (c == 0x7d || c == 0x29 || c == 0x5d) { // } ) ]
      if (depth == 0) return false;
      depth--;
      i++;
      if (c == 0x7d) token = TOKEN_CLOSE_BRACE;
    } else if (c == 0x2e || c == 0x24 || c == 0x21 || c == 0x3a || c == 0x3d || c == 0x40 || c == 0x7c || c == 0x26) {
      i++; // . $ ! : = @ | &
    } else {
      return false; // not GraphQL outside a string or comment
    }

    if (phase == PHASE_NONE) {
      if (token == TOKEN_NAME) {
        if (keyword(doc + nameStart, nameLen, "query")) currentType = OP_QUERY;
        else if (keyword(doc + nameStart, nameLen, "mutation")) currentType = OP_MUTATION;
        else if (keyword(doc + nameStart, nameLen, "subscription")) currentType = OP_SUBSCRIPTION;
        else if (keyword(doc + nameStart, nameLen, "fragment")) currentType = FRAGMENT;
        else return false; // type-system definition or garbage: let the service answer
        phase = currentType == FRAGMENT ? PHASE_IN_DEFINITION : PHASE_AFTER_KEYWORD;
      } else if (token == TOKEN_OPEN_BRACE) {
        // shorthand query `{ … }`: an anonymous query
        operations++;
        if (firstType < 0) firstType = OP_QUERY;
        phase = PHASE_IN_DEFINITION;
      } else {
        return false;
      }
    } else if (phase == PHASE_AFTER_KEYWORD) {
      operations++;
      if (firstType < 0) firstType = currentType;
      if (token == TOKEN_NAME) {
        if (hasOpName && matchedType < 0 && bytesEqualAt(doc + nameStart, nameLen, opName, opNameLen)) matchedType = currentType;
      } else if (token == TOKEN_CLOSE_BRACE && depth == 0) {
        return false;
      }
      phase = PHASE_IN_DEFINITION;
    } else if (token == TOKEN_CLOSE_BRACE && depth == 0) {
      phase = PHASE_NONE; // the selection set closing the definition
    }
  }
  if (phase != PHASE_NONE || depth != 0) return false;
  if (hasOpName) return matchedType == OP_MUTATION;
  return operations == 1 && firstType == OP_MUTATION;
}
