"""Make ``sparkpipes`` importable from the source tree when it is not installed."""

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("sparkpipes") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))
