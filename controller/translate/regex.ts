// Envoy evaluates regexes with RE2, which rejects some ECMAScript syntax (look-around, back-references).
// Validate with a real RE2 so a bad regex is a config-time rejection, not an Envoy NACK.
//
// re2-wasm compiles each pattern into a fixed 16 MiB WebAssembly heap and frees it only when the
// wrapper object it keeps on the RE2 instance is deleted, which its RE2 class never does, not even
// when the pattern is refused. Left alone, a few thousand validations fill the heap and from then on
// every pattern, good ones included, is "refused" with an out-of-memory message. So every wrapper is
// deleted after its check (the setter below sees it even when the constructor throws), and patterns
// are capped in length before compiling (Envoy's own RE2 program-size limit refuses far smaller ones).
import { RE2 } from 're2-wasm';

/** Longer patterns are refused without compiling. */
export const MAX_REGEX_LENGTH = 4096;

interface Deletable {
  delete(): void;
}

let lastWrapper: Deletable | undefined;
Object.defineProperty(RE2.prototype, 'wrapper', {
  configurable: true,
  set(this: object, value: Deletable) {
    lastWrapper = value;
    Object.defineProperty(this, 'wrapper', { value, writable: true, configurable: true });
  },
});

/** Frees the wasm memory of the pattern compiled last, if any. */
function releaseWrapper(): void {
  const wrapper = lastWrapper;
  lastWrapper = undefined;
  wrapper?.delete();
}

/** Returns an error message, or undefined when RE2 accepts the pattern. */
export function re2Error(pattern: string): string | undefined {
  if (pattern.length > MAX_REGEX_LENGTH) return `regex is ${pattern.length} characters long, more than ${MAX_REGEX_LENGTH}`;
  releaseWrapper();
  try {
    new RE2(pattern, 'u');
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return message.replace(/^Invalid regular expression: \/.*\/u: /s, '');
  } finally {
    releaseWrapper();
  }
}

/** The number of capture groups of a pattern RE2 accepts (re2Error first), for substitutions such as `\2`. */
export function re2CaptureGroups(pattern: string): number {
  releaseWrapper();
  try {
    // an alternative that matches the empty string makes exec return every group, matched or not
    const match = new RE2(`(?:${pattern})|`, 'u').exec('');
    return match ? match.length - 1 : 0;
  } finally {
    releaseWrapper();
  }
}
