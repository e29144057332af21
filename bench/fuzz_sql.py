"""SQL fuzzing at scale: ≥ 100,000 mutated valid statements (and token soup) through the
parser and the lowering; every input must meet the oracle of ``sparkpipes.testing.sqlfuzz``
(parse, print back, lower; or a declared, located error) within the time limit. Prints
inputs/s and the outcome counts; exits 1 at the first input that breaks the oracle,
printing it (its repr) with the seed and index that reproduce it.

    .venv/bin/python bench/fuzz_sql.py [--count 100000] [--seed 1] [--seconds 5]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "unit", "sql"))

from sql_cases import ALL

from sparkpipes.testing import sqlfuzz


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--soup", type=float, default=0.1, help="share of token-soup inputs")
    ap.add_argument("--seconds", type=float, default=5.0, help="time limit per input")
    args = ap.parse_args()
    texts = sqlfuzz.corpus(ALL)
    rng = random.Random(args.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    slowest = (0.0, "")
    longest = 0
    t0 = time.perf_counter()
    for i in range(args.count):
        text = sqlfuzz.soup(rng) if rng.random() < args.soup else sqlfuzz.mutate(rng, texts)
        t = time.perf_counter()
        try:
            outcomes[sqlfuzz.check(text, seconds=args.seconds)] += 1
        except AssertionError as e:
            print(f"FAILED at input {i} (seed {args.seed}): {e}")
            return 1
        slowest = max(slowest, (time.perf_counter() - t, text))
        longest = max(longest, len(text))
        if (i + 1) % 20_000 == 0:
            print(f"  {i + 1:,} inputs, {time.perf_counter() - t0:.0f} s", flush=True)
    secs = time.perf_counter() - t0
    rate = args.count / secs
    print(f"{args.count:,} inputs in {secs:.1f} s ({rate:,.0f} inputs/s), seed {args.seed}")
    print(f"corpus: {len(texts)} valid statements; input length up to {longest:,} chars")
    for name, n in outcomes.most_common():
        print(f"  {name:24} {n:>8,}")
    print(f"slowest input: {slowest[0] * 1000:.0f} ms ({len(slowest[1])} chars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
