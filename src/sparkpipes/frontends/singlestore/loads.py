"""One-off loads as ``SqlSession`` runs them: ``LOAD DATA INFILE 'file' … INTO TABLE t`` and
``LOAD DATA <source> 'path' … INTO TABLE t`` (MySQL's and SingleStore's), each through a
pipeline made for it, run until it has loaded everything, and dropped. Who may run one:
``privileges._load_data`` (the table's privileges, and the source's rules of CREATE
PIPELINE)."""

from __future__ import annotations

import dataclasses
import uuid

from sparkpipes.engine import Engine
from sparkpipes.errors import ConfigError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lowering import to_spec
from sparkpipes.frontends.singlestore.results import Result, ok


class LoadStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine``)."""

    engine: Engine

    def _LoadData(self, s: A.LoadData) -> Result:
        """One load of a file of the server: a pipeline of that file made, run until it
        has loaded all of it, and dropped; records it skipped are told in the answer
        (SingleStore's warnings), as the pipeline's errors view goes with it."""
        p = s.pipeline
        if s.local:
            raise ConfigError(
                "LOAD DATA LOCAL (a file sent by the client) is not supported: LOAD DATA "
                "INFILE loads a file the server reads (FILE READ), CREATE PIPELINE … AS "
                "LOAD DATA FS|S3 … loads files from where they are"
            )
        if p.target is None or p.target.kind != "TABLE":
            raise ConfigError("LOAD DATA loads INTO TABLE")
        name = f"__load_data_{uuid.uuid4().hex[:12]}"
        spec = self.engine.prepare_pipeline(
            to_spec(dataclasses.replace(p, name=name), self.engine.pipeline_defaults()),
            replace=False,
        )
        self.engine.create_pipeline_spec(spec, replace=False)
        try:
            results = self.engine.run_batches(name, 1_000_000, until_idle=True)
            skipped = self.engine.errors(name)
        finally:
            self.engine.drop_pipeline(name, if_exists=True)
        done = ok(sum(r.rows for r in results))
        if skipped:
            first = "; ".join(e["reason"] for e in skipped[:3])
            done.message = f"{done.message}; {len(skipped)} skipped ({first})"
        return done
