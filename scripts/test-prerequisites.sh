#!/usr/bin/env bash
# Runs before `npm test`: the suites need a supported Node, a PostgreSQL server on 127.0.0.1:5432 and a
# Redis server on 127.0.0.1:6379 (their tests must run, never skip) and Debian's Chromium for the browser
# tests.
# Starts or installs what is missing when this machine allows it; otherwise says exactly what to do
# and fails.
set -euo pipefail

# The supported Node LTS lines (package.json `engines`, docs/dependencies.md). A machine with another Node
# gets Node 24 from the npm registry with `source scripts/use-node-lts.sh`.
case "$(node -p 'process.versions.node.split(".")[0]')" in
  24) ;;
  *)
    echo "The tests run on Node 24 LTS, not $(node --version): run \`source scripts/use-node-lts.sh\`" \
      "(it fetches Node 24 from the npm registry for this shell), then \`npm ci\` and \`npm test\`." >&2
    exit 1
    ;;
esac

# better-sqlite3 is compiled for one Node ABI: after a switch of Node it must be rebuilt before anything loads it.
if ! node -e "require('better-sqlite3')(':memory:').close()" >/dev/null 2>&1; then
  echo "better-sqlite3 was built for another Node version; rebuilding it for $(node --version)"
  npm rebuild better-sqlite3
fi

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

redis_up() {
  command -v redis-cli >/dev/null 2>&1 && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]
}

if [ -z "${TEST_REDIS_URL:-}" ] && ! redis_up; then
  if ! command -v redis-server >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's redis-server for the shared-state tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
  fi
  if command -v redis-server >/dev/null 2>&1; then
    echo "Redis is not answering on 127.0.0.1:6379; starting it"
    if [ -x /etc/init.d/redis-server ]; then /etc/init.d/redis-server start >/dev/null || true; fi
    redis_up || redis-server --bind 127.0.0.1 --port 6379 --daemonize yes >/dev/null || true
    for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  fi
  if ! redis_up; then
    echo "The tests need Redis at redis://127.0.0.1:6379 (or set TEST_REDIS_URL):" \
      "sudo apt-get install -y redis-server" >&2
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
