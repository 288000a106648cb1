#!/usr/bin/env bash
# Runs before `npm test`: the suites need a PostgreSQL server on 127.0.0.1:5432 (its tests must run,
# never skip) and Debian's Chromium for the browser tests. Starts or installs what is missing when
# this machine allows it; otherwise says exactly what to do and fails.
set -euo pipefail

pg_up() { command -v pg_isready >/dev/null 2>&1 && pg_isready -h 127.0.0.1 -p 5432 -q; }

if [ -z "${TEST_DATABASE_URL:-}" ] && ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "PostgreSQL is not accepting connections on 127.0.0.1:5432; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  if ! pg_up; then
    echo "The tests need PostgreSQL at postgres://postgres@127.0.0.1:5432/test (or set TEST_DATABASE_URL)." >&2
    exit 1
  fi
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
  else
    echo "The browser tests need Debian's Chromium at /usr/bin/chromium: sudo apt-get install -y chromium" >&2
    exit 1
  fi
fi
