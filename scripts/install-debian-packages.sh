#!/usr/bin/env bash
# Installs the Debian packages the tests run as real servers, when missing: redis-server (rate limits,
# OIDC sessions), chromium (browser tests, driven by playwright-core), slapd and ldap-utils (LDAP auth).
# Skips with a notice where apt-get is not available or we are not root: the tests that need a missing
# package then skip themselves. Package services are not left running: tests start their own servers.
set -euo pipefail
# binary -> package
declare -A wanted=([redis-server]=redis-server [chromium]=chromium [slapd]=slapd [ldapadd]=ldap-utils)
missing=()
for bin in "${!wanted[@]}"; do
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing+=("${wanted[$bin]}")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "not installed (needs apt-get as root): ${missing[*]}; the tests that need them will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# slapd asks for an admin password at install time; tests configure their own servers, so accept defaults
echo "slapd slapd/no_configuration boolean true" | debconf-set-selections 2>/dev/null || true
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
} || {
  echo "could not install ${missing[*]}; the tests that need them will be skipped" >&2
  exit 0
}
# packages may have started their default instances; tests do not use them
if command -v service >/dev/null 2>&1; then
  for svc in redis-server slapd; do service "$svc" stop >/dev/null 2>&1 || true; done
fi
echo "installed: ${missing[*]}"
