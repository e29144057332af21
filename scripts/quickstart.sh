#!/usr/bin/env bash
# The main job: embedded broker → sample events → pipeline → Delta table in ./warehouse.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/sparkpipes quickstart "$@"
