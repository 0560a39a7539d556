// The controller's check of opaAuth Rego: the modules and the query module extauth generates
// (common/opa-query.ts), compiled by `opa check` (the binary at $LEGATE_OPA, else `opa` on PATH) in the order
// extauth tries (Rego v1, then v0 as in Gloo's examples; the strict `== true` form, then the plain one). A policy
// that does not compile is then a status reason on the AuthConfig instead of a config extauth denies every
// request of. Translation is pure; the controller hands it this check. Results are kept by content (a policy is
// checked once); without an `opa` binary nothing is checked (undefined), and extauth's log says why it denies.
// A policy that compiles is parsed too (`opa parse`), to find the request headers it reads (controller/rego-reads.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../common/log.js';
import { opaQueryModule, type RegoCheck } from '../common/opa-query.js';
import { regoHeaderReads, type RegoHeaderReads } from './rego-reads.js';

/** Policies remembered at most (the least recently asked is forgotten first). */
const MAX_KNOWN = 256;
const CHECK_TIMEOUT_MS = 20_000;

/** The check with the binary at `bin` (default $LEGATE_OPA, else `opa` on PATH); undefined when it cannot run. */
export function regoChecker(log: Logger, bin = process.env['LEGATE_OPA'] || 'opa'): RegoCheck | undefined {
  try {
    execFileSync(bin, ['version'], { stdio: 'ignore', timeout: CHECK_TIMEOUT_MS });
  } catch {
    log.warn('no opa binary: opaAuth policies are not checked before extauth compiles them', { opa: bin });
    return undefined;
  }
  const known = new Map<string, ReturnType<RegoCheck>>();
  return (modules, query) => {
    const key = createHash('sha256')
      .update(JSON.stringify([modules, query]))
      .digest('hex');
    if (known.has(key)) {
      const hit = known.get(key)!;
      known.delete(key);
      known.set(key, hit);
      return hit;
    }
    const result = check(bin, modules, query);
    known.set(key, result);
    if (known.size > MAX_KNOWN) known.delete(known.keys().next().value!);
    return result;
  };
}

function check(bin: string, modules: Readonly<Record<string, string>>, query: string): ReturnType<RegoCheck> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-rego-'));
  try {
    const names = Object.values(modules).map((text, i) => {
      fs.writeFileSync(path.join(dir, `m${i}.rego`), text);
      return `m${i}.rego`;
    });
    let first: string | undefined;
    let last = '';
    for (const v1 of [true, false])
      for (const strict of [true, false]) {
        // as extauth: the plain form only for a query the strict form cannot parse (several expressions)
        if (!strict && !(first !== undefined && /query\.rego/.test(last) && /rego_parse_error/.test(last))) continue;
        fs.writeFileSync(path.join(dir, 'query.rego'), opaQueryModule(query, v1, strict));
        try {
          execFileSync(bin, ['check', ...(v1 ? [] : ['--v0-compatible']), ...names, 'query.rego'], {
            cwd: dir,
            stdio: 'pipe',
            timeout: CHECK_TIMEOUT_MS,
          });
          return { headers: headerReads(bin, v1, [...names, 'query.rego'], dir) };
        } catch (err) {
          const e = err as { stdout?: Buffer; stderr?: Buffer; message: string };
          const text = `${e.stderr?.toString() ?? ''}${e.stdout?.toString() ?? ''}`.trim() || e.message;
          if (strict) last = text;
          // opa names the files it was given: show the user's module names instead
          first ??= Object.keys(modules)
            .reduce((t, name, i) => t.replaceAll(`m${i}.rego`, name), text)
            .split('\n')
            .filter((l) => l.trim() !== '')
            .slice(0, 4)
            .join(' | ');
        }
      }
    return { error: first ?? 'opa check failed' };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The headers the compiled files read; '*' (every header, as without the analysis) when opa cannot parse them. */
function headerReads(bin: string, v1: boolean, files: readonly string[], cwd: string): RegoHeaderReads {
  try {
    const asts = files.map(
      (f) =>
        JSON.parse(
          execFileSync(bin, ['parse', '--format', 'json', '--json-include', '-comments', ...(v1 ? [] : ['--v0-compatible']), f], {
            cwd,
            stdio: ['ignore', 'pipe', 'pipe'],
            timeout: CHECK_TIMEOUT_MS,
            maxBuffer: 64 << 20,
          }).toString(),
        ) as unknown,
    );
    return regoHeaderReads(asts);
  } catch {
    return '*';
  }
}
