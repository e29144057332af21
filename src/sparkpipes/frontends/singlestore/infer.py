"""``INFER PIPELINE | TABLE``, ``CREATE INFERRED PIPELINE`` (files and topics) and ``FLUSH
EXTRACTOR POOLS``, as ``SqlSession`` runs them.

``INFER`` reads what the source holds now (``engine.sampling``), infers the table
(``inferred``) and answers one row: the ``CREATE TABLE`` and, for ``INFER PIPELINE``, the
``CREATE PIPELINE`` that loads it, one text, as SingleStore's docs show it, named
``infer_example_table`` / ``infer_example_pipeline``. The pipeline is written as
``SHOW CREATE PIPELINE`` writes one: credentials redacted (fill them in to run it), a
link's pipeline as ``LOAD DATA LINK``, batch options resolved. ``CREATE INFERRED
PIPELINE p`` (no INTO) makes table ``p`` of the columns inferred (unless a table ``p``
exists: it loads that one) and pipeline ``p`` into it, mapped as inferred, so that ``SHOW
CREATE PIPELINE`` shows what it loads; a pipeline that cannot be made leaves no table
made for it. A Kafka Connect pipeline's table is the connector's static one
(``SqlSession._CreatePipeline``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sparkpipes.engine import Engine
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.build_pipelines import INFERRED_PIPELINE, INFERRED_TABLE
from sparkpipes.frontends.singlestore.inferred import (
    CSV_FIELDS,
    Inferred,
    infer,
    pipeline_of,
    table_sql,
)
from sparkpipes.frontends.singlestore.lowering import create_pipeline_sql, to_spec
from sparkpipes.frontends.singlestore.parser import parse_one
from sparkpipes.frontends.singlestore.results import Result, ok

#: the column of INFER's answer
INFERRED_COLUMN = "Inferred DDL"


class InferStatements:
    """Handlers mixed into ``SqlSession`` (which sets ``engine`` and ``run``)."""

    engine: Engine
    run: Callable[[A.Statement], Result]

    def _InferPipeline(self, s: A.InferPipeline) -> Result:
        load = s.pipeline
        inferred = self._inferred(load)
        text = table_sql(INFERRED_TABLE, inferred)
        if not s.table_only:
            made = pipeline_of(load, INFERRED_PIPELINE, INFERRED_TABLE, inferred)
            spec = self.engine.prepare_pipeline(to_spec(made, self.engine.pipeline_defaults()))
            text += ";\n\n" + create_pipeline_sql(spec)
        return Result([INFERRED_COLUMN], [(text + ";",)])

    def _inferred(self, load: A.CreatePipeline) -> Inferred:
        """The table ``load`` (an inferred load, no INTO) would make, from its source."""
        read = load
        if (load.format or "CSV") == "CSV" and load.fields is None:
            read = dataclasses.replace(load, fields=CSV_FIELDS)  # records cut as CSV's
        spec = to_spec(read, self.engine.pipeline_defaults())
        return infer(load, self.engine.sample_source(spec))

    def create_inferred(self, s: A.CreatePipeline) -> Result:
        """``CREATE INFERRED PIPELINE p`` without INTO, of files or a topic."""
        if s.if_not_exists and s.name in {p.name for p in self.engine.pipelines()}:
            return ok(0)
        inferred = self._inferred(s)
        made = None
        if s.name not in self.engine.tables():
            self.run(parse_one(table_sql(s.name, inferred)))
            made = s.name
        try:
            return self.run(pipeline_of(s, s.name, s.name, inferred))
        except SparkpipesError:
            if made is not None:
                self.engine.drop_table(made, if_exists=True)
            raise

    def _FlushExtractorPools(self, s: A.FlushExtractorPools) -> Result:
        """Nothing to flush: batches open their consumers and close them, none is cached
        (SingleStore's answer counts the nodes flushed: none here)."""
        return ok(0)
