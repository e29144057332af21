"""Loaded by every Python process of a what-if benchmark child (PYTHONPATH=bench/whatif),
including Spark's Python workers, so a proposed fix reaches the executors too."""

import os

_names = {n for n in os.environ.get("SPARKPIPES_BENCH_WHATIF", "").split(",") if n}
if _names:
    import sparkpipes_fixes

    sparkpipes_fixes.apply(_names)
