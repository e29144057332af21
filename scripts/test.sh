#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bootstrap, services, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --services
exec .venv/bin/python -m pytest -q "$@"
