#!/usr/bin/env bash
# Installs redis-server (Debian's package) for the ratelimit service's Redis tests and `--redis`, when it
# is missing. Skips with a notice where apt-get is not available or we are not root: the Redis e2e test
# then skips itself too. The package's own service is not left running: tests start their own servers.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "redis-server not installed (needs apt-get as root); the Redis rate-limit tests will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends redis-server >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends redis-server >/dev/null
} || {
  echo "could not install redis-server; the Redis rate-limit tests will be skipped" >&2
  exit 0
}
# the package may have started its default instance (port 6379); tests do not use it
if command -v service >/dev/null 2>&1; then service redis-server stop >/dev/null 2>&1 || true; fi
redis-server --version
