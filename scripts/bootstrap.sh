#!/usr/bin/env bash
# Prepare this checkout on a fresh machine: Java 17, a virtualenv with the package and its
# test extras, and (with --services) PostgreSQL running on 127.0.0.1. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
want_services=0
[ "${1:-}" = "--services" ] && want_services=1

say() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { [ "$(id -u)" = 0 ]; }
apt_install() {
  if as_root && command -v apt-get >/dev/null; then
    if [ ! -f /tmp/.sparkpipes-apt-updated ]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq && touch /tmp/.sparkpipes-apt-updated
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    say "missing: $*; install it (Debian/Ubuntu: sudo apt-get install $*) and run again"
    exit 1
  fi
}

# Python >= 3.11
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  say "Python 3.11 or newer is needed (found: $("$PY" --version 2>&1 || echo none))"
  exit 1
fi

# Java 17 for Spark
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  say "installing Java 17 (Spark needs it)"
  apt_install openjdk-17-jre-headless
fi
# keytool (Java's own) makes the JDBC TLS tests' key stores as Connect users make theirs
if ! command -v keytool >/dev/null; then
  say "installing Java 17's keytool"
  apt_install openjdk-17-jre-headless
fi

# virtualenv + packages (re-installed only when what the install builds from changes)
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.sparkpipes-installed
# what the install builds from: the package's metadata and its C helper
install_inputs() { cat pyproject.toml setup.py src/sparkpipes/sources/_fetchcopy.c; }
if [ ! -f "$stamp" ] || ! install_inputs | cmp -s - "$stamp"; then
  say "installing sparkpipes and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[test]"
  install_inputs > "$stamp"
fi

if [ "$want_services" = 1 ]; then
  # PostgreSQL on 127.0.0.1:5432 for the catalog tests
  if ! command -v pg_ctlcluster >/dev/null; then
    say "installing PostgreSQL"
    apt_install postgresql
    fresh_pg=1
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    say "starting PostgreSQL $ver"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  if [ "${fresh_pg:-0}" = 1 ] && as_root; then
    su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" || true
  fi
  pg_isready -q -h 127.0.0.1 -p 5432 || { say "PostgreSQL is not answering on 127.0.0.1:5432"; exit 1; }

  # MariaDB on 127.0.0.1:3306 for the JDBC source tests, with a user the tests log in as
  # (the JDBC TLS tests start a second server of their own: mariadb-install-db, mariadbd)
  if ! command -v mariadbd >/dev/null || ! command -v mariadb-install-db >/dev/null; then
    say "installing MariaDB"
    apt_install mariadb-server mariadb-client
  fi
  if ! mariadb-admin -h 127.0.0.1 -u root ping >/dev/null 2>&1 \
      && ! mariadb-admin -h 127.0.0.1 -u sparkpipes -psparkpipes ping >/dev/null 2>&1; then
    say "starting MariaDB"
    # mysqld_safe as Debian's init script runs it (whose own check needs a maintenance
    # user that a fresh install may not give it)
    if [ -x /usr/bin/mysqld_safe ]; then (setsid /usr/bin/mysqld_safe >/dev/null 2>&1 &)
    else service mariadb start >/dev/null 2>&1 || true; fi
    for _ in $(seq 30); do
      mariadb-admin -h 127.0.0.1 -u sparkpipes -psparkpipes ping >/dev/null 2>&1 && break
      mariadb-admin -u root ping >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  if ! mariadb -h 127.0.0.1 -u sparkpipes -psparkpipes -e 'SELECT 1' >/dev/null 2>&1; then
    for who in "-u root" "-h 127.0.0.1 -u root"; do
      # shellcheck disable=SC2086
      mariadb $who -e "CREATE USER IF NOT EXISTS 'sparkpipes'@'127.0.0.1' IDENTIFIED BY 'sparkpipes';
        CREATE USER IF NOT EXISTS 'sparkpipes'@'localhost' IDENTIFIED BY 'sparkpipes';
        GRANT ALL ON *.* TO 'sparkpipes'@'127.0.0.1'; GRANT ALL ON *.* TO 'sparkpipes'@'localhost';" \
        >/dev/null 2>&1 && break
    done
  fi
  mariadb -h 127.0.0.1 -u sparkpipes -psparkpipes -e 'SELECT 1' >/dev/null 2>&1 \
    || { say "MariaDB is not answering on 127.0.0.1:3306 for user sparkpipes"; exit 1; }

  # Redis on 127.0.0.1:6379 for the Redis Streams stream plugin tests
  if ! command -v redis-server >/dev/null; then
    say "installing Redis"
    apt_install redis-server
  fi
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    say "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /tmp >/dev/null
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 \
    || { say "Redis is not answering on 127.0.0.1:6379"; exit 1; }

  # Azurite (Azure Blob) from npm, into .tools/, for the object-store tests (moto, for S3,
  # comes with the Python test extras)
  if [ ! -x .tools/node_modules/.bin/azurite-blob ]; then
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
      say "installing Node.js and npm (for Azurite)"
      apt_install nodejs npm
    fi
    say "installing Azurite into .tools/"
    npm install --prefix .tools --no-audit --no-fund --loglevel=error azurite@3 >/dev/null
  fi

  # Debian's Chromium for the web console's browser tests (driven by Playwright, which
  # must not download a browser of its own), and wrk for the HTTP load benchmark
  if ! command -v chromium >/dev/null; then
    say "installing Chromium (browser tests)"
    apt_install chromium
  fi
  if ! command -v wrk >/dev/null; then
    apt_install wrk || say "wrk is missing (only bench/bench_http_status.py needs it)"
  fi
fi
say "ready ($root/.venv)"
