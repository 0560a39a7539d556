// The generated Envoy types stay in step with the pinned protos, and typed() turns a misspelt field
// into a compile error (tsc checks this file in `make typecheck`).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { typed } from '../../envoy/typed.js';
import { generate } from '../../scripts/gen-envoy-types.js';

describe('envoy/types.generated.ts', () => {
  it('is what scripts/gen-envoy-types.ts generates from the pinned protos (run `make envoy-types`)', () => {
    const file = path.join(import.meta.dirname, '../../envoy/types.generated.ts');
    expect(fs.readFileSync(file, 'utf8') === generate()).toBe(true);
  });
});

describe('typed()', () => {
  it('writes the type URL first, then the fields', () => {
    const config = typed('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute', { disabled: true });
    expect(Object.keys(config)).toEqual(['@type', 'disabled']);
  });

  it('refuses fields the message does not have, and values of the wrong type', () => {
    // @ts-expect-error: ExtAuthz has failure_mode_allow, not failure_mode_allowed
    typed('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', { failure_mode_allowed: false });
    // @ts-expect-error: an enum takes its value names only
    typed('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', { transport_api_version: 'V4' });
    // @ts-expect-error: not a type URL Legate writes
    typed('type.googleapis.com/envoy.extensions.filters.http.nope.v3.Nope', {});
    expect(true).toBe(true);
  });
});
