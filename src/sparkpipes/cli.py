"""The ``sparkpipes`` command. User errors print one clear line, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys

from sparkpipes.errors import SparkpipesError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sparkpipes",
        description="Exactly-once streaming ingestion into Delta tables on Apache Spark.",
    )
    p.add_argument(
        "--warehouse",
        default=os.environ.get("SPARKPIPES_WAREHOUSE", "./warehouse"),
        help="warehouse directory (tables and the default SQLite catalog); "
        "env SPARKPIPES_WAREHOUSE",
    )
    p.add_argument(
        "--catalog-url",
        default=os.environ.get("SPARKPIPES_CATALOG_URL"),
        help="SQLAlchemy URL of the catalog (default: SQLite in the warehouse); "
        "env SPARKPIPES_CATALOG_URL",
    )
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser(
        "quickstart",
        help="embedded broker + sample events + a pipeline into a Delta table",
        description="Start the embedded Kafka broker, produce sample events shaped like "
        "Pinot's datagen to topic 'events', load them with a pipeline into the Delta table "
        "'events' in the warehouse, and print the row count and a few rows.",
    )
    q.add_argument("--events", type=int, default=20_000, help="events to produce (20000)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "quickstart":
            from sparkpipes.quickstart import run

            return run(args.warehouse, args.catalog_url, args.events)
    except SparkpipesError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
