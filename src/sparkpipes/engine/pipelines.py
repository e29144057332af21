"""Pipeline definitions: create, alter, drop, and read back as a spec.

Every front end hands in a :class:`PipelineSpec` (the Python API through
``config.lower.kwargs``, SQL through ``config.lower.sql``); options it leaves out take the
engine variables' values (:meth:`Pipelines.defaults`), so a pipeline defined in Python
and one defined in SQL behave the same. A definition is validated by its plugins and
against its table before it is stored; it is stored ``Stopped``.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from sparkpipes.catalog import PipelineRecord, PipelineState
from sparkpipes.config import PipelineSpec, Secret
from sparkpipes.config.spec import from_kwargs
from sparkpipes.engine import variables
from sparkpipes.engine.batch.assembly import build_source_of, validate
from sparkpipes.engine.procedures import Procedures
from sparkpipes.engine.runtime import Runtime
from sparkpipes.engine.sampling import Sample, sample
from sparkpipes.errors import ConfigError, NotFoundError, SparkpipesError

FEATURES = "experimental_features_config"


class Pipelines:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def defaults(self) -> dict[str, Any]:
        """Options (Python API names) a new pipeline takes from the variables."""
        return variables.pipeline_defaults(variables.resolve(self.rt.catalog.variables.all()))

    def build(self, name: str, options: dict[str, Any]) -> PipelineSpec:
        return from_kwargs({"name": name, **options}, self.defaults())

    def prepare(self, spec: PipelineSpec, *, replace: bool = False) -> PipelineSpec:
        """Check what must hold before anything is created for ``spec`` (the source's
        own options as the user wrote them, an experimental feature switched on) and
        move secrets given in CONFIG into the credentials. With ``replace`` (CREATE OR
        REPLACE), secrets given back as ``<redacted>`` (SHOW CREATE PIPELINE's text run
        again) keep the stored ones, where they would be sent where they were
        (:meth:`PipelineSpec.keep_secrets`); without it there is nothing to keep. Either
        way before anything (a source check) could send them."""
        if spec.redacted_secrets():
            stored = None
            if replace:
                try:
                    stored = self.spec(spec.name)
                except NotFoundError:
                    pass
            spec = spec.keep_secrets(stored)
        source = build_source_of(spec)
        if source.feature:
            flags = str(variables.resolve(self.rt.catalog.variables.all())[FEATURES])
            on = {f.strip().lower() for f in flags.split(",")}
            if f"{source.feature}=true" not in on:
                raise ConfigError(
                    f"LOAD DATA {spec.source.kind.upper()} is an experimental feature: "
                    f'run SET GLOBAL {FEATURES} = "{source.feature}=true" first',
                    pipeline=spec.name,
                )
        lifted = source.secret_config_keys()
        if not lifted:
            return spec
        src = spec.source
        return spec.replace(
            source=dataclasses.replace(
                src,
                config={k: v for k, v in src.config.items() if k not in lifted},
                credentials={
                    **src.credentials,
                    **{k: Secret(str(src.config[k])) for k in lifted},
                },
            )
        )

    def inferred_table(self, spec: PipelineSpec) -> str:
        """The ``CREATE TABLE`` statement of the table an inferred pipeline loads."""
        ddl = build_source_of(spec).inferred_table(spec.table)
        if ddl is None:
            raise ConfigError(
                f"CREATE INFERRED PIPELINE infers a table for LOAD DATA KAFKACONNECT, not "
                f"{spec.source.kind.upper()}; create the table and use INTO TABLE",
                pipeline=spec.name,
            )
        return ddl

    def sample(self, spec: PipelineSpec) -> Sample:
        """What ``spec``'s source holds now, for inferring its table (``engine.sampling``):
        read, never loaded."""
        try:
            return sample(self.prepare(spec))
        except SparkpipesError as e:
            raise e.with_context(pipeline=spec.name) from None

    def create(self, spec: PipelineSpec, *, replace: bool = False) -> PipelineSpec:
        """Define a pipeline from a spec any front end lowered (state ``Stopped``)."""
        spec = self.prepare(spec, replace=replace)
        validate(spec, Procedures(self.rt).target(spec))
        existing = None
        if replace:
            try:
                existing = self.rt.catalog.pipelines.get(spec.name)
            except NotFoundError:
                pass
        pid = existing.id if existing else uuid.uuid4().hex
        with self.rt.lock(spec.name):
            self.rt.catalog.pipelines.create(
                spec.name,
                pid,
                spec.source.kind,
                spec.table,
                spec.to_json(),
                {k: v.reveal() for k, v in spec.credentials.items()},
                PipelineState.STOPPED,
                replace=replace,
            )
            self.rt.forget(spec.name)
        return spec

    def check_source(self, spec: PipelineSpec) -> str:
        """Whether the spec's source answers now; what it said (see ``Source.check``).
        The definition is validated first, so its own mistakes are reported before the
        source's."""
        source = build_source_of(spec)
        validate(spec, Procedures(self.rt).target(spec))
        try:
            return source.check()
        except SparkpipesError as e:
            raise e.with_context(pipeline=spec.name) from None

    def spec(self, name: str) -> PipelineSpec:
        """The pipeline's definition, with its credentials."""
        rec = self.rt.catalog.pipelines.get(name)
        return PipelineSpec.from_json(rec.definition, self.rt.catalog.pipelines.credentials(name))

    def get(self, name: str) -> PipelineRecord:
        """The pipeline's catalog record (state, table, last error, …)."""
        return self.rt.catalog.pipelines.get(name)

    def all(self) -> list[PipelineRecord]:
        """Every pipeline's catalog record."""
        return self.rt.catalog.pipelines.all()

    def alter(self, name: str, **changes: Any) -> PipelineSpec:
        """Change options (Python API names, e.g. ``batch_interval_ms``) keeping the
        pipeline's offsets, id and state."""
        options = {**self.spec(name).to_kwargs(), **changes}
        new = from_kwargs(options)
        validate(new, Procedures(self.rt).target(new))
        with self.rt.lock(name):
            self.rt.catalog.pipelines.update(name, definition=new.to_json())
            self.rt.forget(name)
        return new

    def drop(self, name: str, *, if_exists: bool = False) -> None:
        """Delete the pipeline's definition and history; its table stays."""
        try:
            rec = self.rt.catalog.pipelines.get(name)
        except NotFoundError:
            if if_exists:
                return
            raise
        with self.rt.lock(name):
            self.rt.forget(name)
            self.rt.catalog.pipelines.drop(name)
            self.rt.catalog.batches.drop_history(rec.id)
