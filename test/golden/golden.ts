// What both golden suites do: check a rendered Envoy resource survives protobuf encoding unchanged
// (protobufjs would otherwise drop a misspelt field silently), and compare with (or, with
// UPDATE_GOLDEN=1 or when missing, write) the .out.yaml file. In CI (CI set, as .ci/run does) a missing one fails:
// a golden nobody read must not pass.
import fs from 'node:fs';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { decodeAny, encodeAny } from '../../envoy/protos.js';

export function expectRoundTrip(typeUrl: string, name: string, resource: object): void {
  const back = decodeAny(typeUrl, encodeAny(typeUrl, resource).value);
  expect(normalize(back), `${name} round-trips through protobuf`).toEqual(normalize(resource));
}

export function expectGolden(outFile: string, value: unknown): void {
  const actual = stringify(value, { sortMapEntries: false, lineWidth: 0, aliasDuplicateObjects: false });
  const missing = !fs.existsSync(outFile);
  if (missing && process.env['CI'] && !process.env['UPDATE_GOLDEN']) {
    throw new Error(`${outFile} is missing: write it with UPDATE_GOLDEN=1 locally, read it, and commit it`);
  }
  if (process.env['UPDATE_GOLDEN'] || missing) fs.writeFileSync(outFile, actual);
  expect(actual).toBe(fs.readFileSync(outFile, 'utf8'));
}

/** JSON form with sorted keys, numbers for 64-bit ints, enum names, base64 bytes, so both sides compare equal. */
function normalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalize);
  // bytes fields (an OCSP staple's inline_bytes) are base64 in JSON and decode to bytes
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .filter((k) => o[k] !== undefined && !(Array.isArray(o[k]) && (o[k] as unknown[]).length === 0))
        .sort()
        .map((k) => [k, normalize(o[k])]),
    );
  }
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return v;
}
