#!/usr/bin/env bash
# Builds OPA (the server opaServerAuth queries, and `opa build -t wasm` for opaAuth policies) from the Go
# module pinned in test/opa/tools into .cache/opa/bin, once; later runs reuse it. Test infrastructure
# only, run by the suites that need a policy engine (test/e2e/auth-opa.test.ts, bench's auth scenario).
#   cold: see docs/decisions.md (OPA build time on the 2-core machine)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/opa/bin"
version="v1.22.3"
mkdir -p "$out"

stamp="$out/.opa-$version-$(sha256sum <"$root/test/opa/tools/go.sum" | cut -c1-16)"
if [[ -f "$stamp" && -x "$out/opa" ]]; then
  exit 0
fi
echo "building opa $version into $out (first time only: a few minutes)" >&2
(cd "$root/test/opa/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/opa" github.com/open-policy-agent/opa)
rm -f "$out"/.opa-*
touch "$stamp"
