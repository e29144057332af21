#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bootstrap, services, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --services
# the slowest tests are listed at the end, to keep the suite inside CI's time
exec .venv/bin/python -m pytest -q --durations=25 "$@"
