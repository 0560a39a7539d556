// Envoy evaluates regexes with RE2, which rejects some ECMAScript syntax (look-around, back-references).
// Validate with a real RE2 so a bad regex is a config-time rejection, not an Envoy NACK.
import { RE2 } from 're2-wasm';

/** Returns an error message, or undefined when RE2 accepts the pattern. */
export function re2Error(pattern: string): string | undefined {
  try {
    new RE2(pattern, 'u');
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return message.replace(/^Invalid regular expression: \/.*\/u: /, '');
  }
}
