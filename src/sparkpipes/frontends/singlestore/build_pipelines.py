"""Parse tree to AST for pipelines: ``CREATE [INFERRED] PIPELINE`` with its options and load
clauses, checked for duplicates, ranges, formats and JSON, and ``START | STOP | DROP | ALTER |
TEST | SHOW [CREATE] PIPELINE``."""

from __future__ import annotations

from typing import Any

from lark import Token, Tree

from sparkpipes.config.core import strict_json
from sparkpipes.frontends.singlestore.ast_links import (
    CreateLink,
    DropLink,
    ShowCreateLink,
    ShowLinks,
)
from sparkpipes.frontends.singlestore.ast_pipelines import (
    AlterPipeline,
    AlterPipelineDropFile,
    CreatePipeline,
    DetachPipeline,
    DropPipeline,
    FieldMapping,
    FieldsFormat,
    FlushExtractorPools,
    InferPipeline,
    LinesFormat,
    LoadColumn,
    LoadData,
    ShowCreatePipeline,
    ShowPipelines,
    StartAllPipelines,
    StartPipeline,
    StopAllPipelines,
    StopPipeline,
    Target,
    TestPipeline,
    Transform,
)
from sparkpipes.frontends.singlestore.build_base import Builder, _kw, _sub, _subs, _tok

FORMATS = frozenset({"JSON", "CSV", "RAW", "AVRO", "PARQUET"})
_MAPPING_FORMATS = frozenset({"JSON", "AVRO", "PARQUET"})
#: the load clauses an inferred load (INFER, CREATE INFERRED PIPELINE without INTO) takes
#: among its options
_INFER_ITEMS = frozenset(
    {
        "fields_clause",
        "lines_clause",
        "ignore_lines",
        "null_defined",
        "trailing_nullcols",
        "header_detection",
    }
)
#: the pipeline (and table) an INFER answer names, as SingleStore's docs show it
INFERRED_PIPELINE = "infer_example_pipeline"
INFERRED_TABLE = "infer_example_table"
#: SingleStore's formats that are not done here, and what to do instead
_NOT_YET_FORMATS = {
    "ICEBERG": ": it reads an Iceberg table through its catalog (CONFIG catalog_type), and "
    "sparkpipes has no Iceberg catalog; a pipeline of FORMAT PARQUET loads the table's data "
    "files as files",
}


class PipelineBuilder(Builder):
    """The pipeline statements of the builder (see ``build_base.Builder``)."""

    def json_object(self, tok: Token | None, what: str, *, arrays: bool = False) -> str:
        """The JSON object (or, with ``arrays``, array) text in string ``tok``."""
        assert tok is not None
        raw = self.string(tok)
        try:
            value = strict_json(raw)
        except ValueError as e:
            self.fail(f"{what} is not valid JSON: {e}", tok)
        except RecursionError:
            self.fail(f"{what} is nested too deeply", tok)
        if not isinstance(value, dict) and not (arrays and isinstance(value, list)):
            self.fail(f"{what} must be a JSON object{' or array' if arrays else ''}", tok)
        for item in value if isinstance(value, list) else ():
            if not isinstance(item, dict) or {str(k).upper() for k in item} != {"KEY", "VALUE"}:
                self.fail(
                    f"{what} as an array takes objects with KEY and VALUE, as information_"
                    'schema.PIPELINES_SOURCE_OFFSETS shows them: [{"KEY": {…}, "VALUE": {…}}]',
                    tok,
                )
        return raw

    def _create_inferred_pipeline(self, tree: Tree) -> CreatePipeline:
        made = self._create_pipeline(tree, inferred=True)
        if made.target is not None and made.header_detection is not None:
            self.fail(
                "HEADER_DETECTION says how a CSV header is inferred: it goes without INTO "
                "(the pipeline inferred makes its own table)",
                _sub(tree, "header_detection"),
            )
        return made

    def _infer_pipeline(self, tree: Tree) -> InferPipeline:
        if _sub(tree, "as_json") is not None:
            self.fail(
                "INFER … AS JSON is not supported: the JSON form of the definitions is not "
                "documented; INFER without AS JSON answers their SQL",
                _sub(tree, "as_json"),
            )
        source = _sub(tree, "name")
        link = _sub(tree, "link_source")
        fields: dict[str, Any] = {
            "name": INFERRED_PIPELINE,
            "source": "LINK" if source is None else self.name(source).upper(),
            "link": None if link is None else self.name(_sub(link, "name")),
            "location": self.string(_tok(tree, "STRING")),
            "inferred": True,
        }
        pipeline = CreatePipeline(**self.pipeline_body(tree, fields))
        return InferPipeline(pipeline, table_only=_tok(tree, "TABLE") is not None)

    def _flush_extractor_pools(self, tree: Tree) -> FlushExtractorPools:
        return FlushExtractorPools(node=_tok(tree, "NODE") is not None)

    def _create_pipeline(self, tree: Tree, inferred: bool = False) -> CreatePipeline:
        name, *source = (self.name(n) for n in _subs(tree, "name"))
        link = _sub(tree, "link_source")
        fields: dict[str, Any] = {
            "name": name,
            "source": source[0].upper() if source else "LINK",
            "link": None if link is None else self.name(_sub(link, "name")),
            "location": self.string(_tok(tree, "STRING")),
            "inferred": inferred,
            "or_replace": _sub(tree, "or_replace") is not None,
            "if_not_exists": _sub(tree, "if_not_exists") is not None,
            "aggregator": _sub(tree, "aggregator") is not None,
        }
        return CreatePipeline(**self.pipeline_body(tree, fields))

    def _load_data(self, tree: Tree) -> LoadData:
        source = _sub(tree, "name")
        fields: dict[str, Any] = {
            "name": "load_data",
            "source": "FS" if source is None else self.name(source).upper(),
            "location": self.string(_tok(tree, "STRING")),
        }
        pipeline = CreatePipeline(**self.pipeline_body(tree, fields))
        return LoadData(pipeline, local=_tok(tree, "LOCAL") is not None, infile=source is None)

    def pipeline_body(self, tree: Tree, fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` with the load options, the target and the load clauses of ``tree``
        (CREATE PIPELINE's, or LOAD DATA's)."""
        seen: dict[str, Any] = {}
        hints: list[str] = []
        options = [c for c in tree.children if isinstance(c, Tree)]
        for opt in options:
            if opt.data == "opt_config":
                self.once(seen, "config", opt, "CONFIG")
                fields["config"] = self.json_object(_tok(opt, "STRING"), "CONFIG")
            elif opt.data == "opt_credentials":
                self.once(seen, "credentials", opt, "CREDENTIALS")
                fields["credentials"] = self.json_object(_tok(opt, "STRING"), "CREDENTIALS")
            elif opt.data == "opt_skip":
                self.once(seen, "skip", opt, "SKIP … ERRORS")
                kind = _sub(opt, "skip_kind")
                assert kind is not None
                fields["skip_errors"] = " ".join(str(t.type) for t in kind.children)
            elif opt.data == "opt_transform":
                self.once(seen, "transform", opt, "WITH TRANSFORM")
                uri, executable, arguments = (
                    self.string(t)
                    for t in opt.children
                    if isinstance(t, Token) and t.type == "STRING"
                )
                fields["transform"] = Transform(uri, executable, arguments)
            elif opt.data == "opt_skip_check":
                self.once(seen, "skip_check", opt, "SKIP SOURCE CHECK")
                fields["check_source"] = False
            elif opt.data == "opt_conflict":
                self.once(seen, "conflict", opt, "REPLACE / IGNORE")
                fields["on_conflict"] = _kw(opt)
            elif opt.data == "opt_hint":
                words = [str(t).upper() for t in opt.scan_values(lambda v: isinstance(v, Token))]
                self.once(seen, words[-1], opt, " ".join(words[1:]))
                hints.append(" ".join(words))
            elif opt.data == "format_clause":
                self.format_clause(opt, seen, fields)
            elif opt.data == "schema_clause":
                self.tail_schema_clause(opt, seen, fields)
            elif opt.data.startswith("opt_"):
                self.setting(opt, seen, fields)
            elif opt.data in _INFER_ITEMS:  # an inferred load's own CSV clauses (no INTO)
                getattr(self, f"tail_{opt.data}")(opt, seen, fields)
        fields["hints"] = tuple(hints)
        into = _sub(tree, "into_clause")
        if into is not None:
            fields["target"] = Target(_kw(into, 1), self.name(_sub(into, "name")))
            tail = _sub(tree, "load_tail")
            assert tail is not None
            self.load_tail(tail, seen, fields)
        else:
            self.csv_only(seen, fields)
        return fields

    def tail_header_detection(
        self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]
    ) -> None:
        self.once(seen, "header_detection", item, "HEADER_DETECTION")
        word = "ON" if _tok(item, "ON") is not None else self.name(_sub(item, "name")).upper()
        if word not in ("ON", "OFF"):
            self.fail(f"HEADER_DETECTION takes ON or OFF, not {word}", item)
        fields["header_detection"] = word == "ON"

    _SETTINGS = {
        "opt_batch_interval": ("batch_interval", 0, "BATCH_INTERVAL"),
        "opt_max_partitions": ("max_partitions_per_batch", 1, "MAX_PARTITIONS_PER_BATCH"),
        "opt_max_offsets": (
            "max_offsets_per_batch_partition",
            1,
            "MAX_OFFSETS_PER_BATCH_PARTITION",
        ),
        "opt_max_retries": (
            "max_retries_per_batch_partition",
            0,
            "MAX_RETRIES_PER_BATCH_PARTITION",
        ),
    }

    def setting(self, opt: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        field, minimum, keyword = self._SETTINGS[str(opt.data)]
        self.once(seen, field, opt, keyword)
        fields[field] = self.integer(_sub(opt, "int_value"), minimum, keyword)

    def format_clause(self, tree: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "format", tree, "FORMAT")
        node = _sub(tree, "name")
        value = self.name(node).upper()
        if value in _NOT_YET_FORMATS:
            assert node is not None
            self.fail(f"FORMAT {value} is not supported{_NOT_YET_FORMATS[value]}", node)
        if value not in FORMATS:
            assert node is not None
            self.fail(f"unknown format '{value}' (expected {', '.join(sorted(FORMATS))})", node)
        fields["format"] = value

    def tail_schema_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        text = _tok(item, "STRING")
        assert text is not None
        if fields.get("format") != "AVRO":
            shown = fields.get("format")
            if shown is None:
                self.fail("SCHEMA goes after FORMAT AVRO", text)
            self.fail(f"FORMAT {shown} takes no SCHEMA (FORMAT AVRO does)", text)
        if "schema" in fields or "schema_registry" in fields:
            self.fail("the Avro schema is given twice", item)
        key = "schema_registry" if _tok(item, "REGISTRY") is not None else "schema"
        fields[key] = self.string(text)

    def tail_null_defined(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "null_defined_by", item, "NULL DEFINED BY")
        fields["null_defined_by"] = self.string(_tok(item, "STRING"))
        fields["null_enclosed"] = _tok(item, "ENCLOSED") is not None

    def tail_trailing_nullcols(
        self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]
    ) -> None:
        self.once(seen, "trailing_nullcols", item, "TRAILING NULLCOLS")
        fields["trailing_nullcols"] = True

    def load_tail(self, tail: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        for item in tail.children:
            assert isinstance(item, Tree)
            handler = getattr(self, f"tail_{item.data}")
            handler(item, seen, fields)
        fmt = fields.get("format")
        if fields.get("mappings") and fmt not in _MAPPING_FORMATS:
            self.fail("field mappings (<-) need FORMAT JSON, AVRO or PARQUET", seen["mappings"])
        self.csv_only(seen, fields)

    def csv_only(self, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        """The clauses of CSV given with another FORMAT fail, naming the clause."""
        fmt = fields.get("format")
        for key in (
            "fields",
            "lines",
            "ignore_lines",
            "null_defined_by",
            "trailing_nullcols",
            "header_detection",
        ):
            if key in seen and fmt not in (None, "CSV"):
                self.fail(f"{key.upper().replace('_', ' ')} applies to CSV only", seen[key])

    def column_target(self, node: Tree | None, fields: dict[str, Any]) -> str:
        """A loaded column as written: ``c``, ``t.c`` or ``db.t.c``, where ``t`` must be the
        table (or procedure) the pipeline loads, as SingleStore requires."""
        assert node is not None
        *qualifiers, column = self.parts(node)
        if qualifiers:
            target = fields.get("target")
            if target is None or qualifiers[-1].lower() != target.name.lower():
                into = "no table" if target is None else f"'{target.name}'"
                self.fail(
                    f"column '{'.'.join([*qualifiers, column])}' is not a column of the table "
                    f"the pipeline loads ({into})",
                    node,
                )
            if len(qualifiers) == 2:
                self.databases.append(qualifiers[0])
        return column

    def tail_format_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.format_clause(item, seen, fields)

    def tail_load_fields(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        entries = _subs(item, "load_field")
        is_mapping = len(entries[0].children) > 1
        mappings: list[FieldMapping] = []
        columns: list[LoadColumn] = []
        for entry in entries:
            target = entry.children[0]
            assert isinstance(target, Tree)
            discard = target.data == "discard_target"
            if discard and is_mapping:
                self.fail("a bare @ discards a field of a column list, not of a mapping", entry)
            column = "" if discard else self.column_target(_sub(target, "name"), fields)
            variable = target.data != "column_target"
            path = _sub(entry, "rooted_path", "key_path")
            if (path is not None) != is_mapping:
                self.fail("a column list cannot mix mappings (<-) and plain columns", entry)
            if path is None:
                columns.append(LoadColumn(column, variable))
                continue
            default = next((c for c in entry.children[2:] if isinstance(c, Tree)), None)
            mappings.append(
                FieldMapping(
                    column,
                    self.names(path),
                    variable=variable,
                    rooted=path.data == "rooted_path",
                    default=None if default is None else self.literal(default),
                )
            )
        if is_mapping:
            self.once(seen, "mappings", item, "the field mapping list")
            fields["mappings"] = tuple(mappings)
        else:
            self.once(seen, "columns", item, "the column list")
            fields["columns"] = tuple(columns)

    def tail_fields_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "fields", item, "FIELDS")
        values: dict[str, Any] = {}
        own: dict[str, Any] = {}
        for opt in _subs(item, "fields_terminated", "fields_enclosed", "fields_escaped"):
            key = {
                "fields_terminated": "terminated_by",
                "fields_enclosed": "enclosed_by",
                "fields_escaped": "escaped_by",
            }[str(opt.data)]
            self.once(own, key, opt, key.upper().replace("_", " "))
            values[key] = self.string(_tok(opt, "STRING"))
            if opt.data == "fields_enclosed":
                values["optionally_enclosed"] = _tok(opt, "OPTIONALLY") is not None
        fields["fields"] = FieldsFormat(**values)

    def tail_lines_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "lines", item, "LINES")
        values: dict[str, Any] = {}
        for opt in _subs(item, "lines_terminated", "lines_starting"):
            key = "terminated_by" if opt.data == "lines_terminated" else "starting_by"
            self.once(values, key, opt, key.upper().replace("_", " "))
            values[key] = self.string(_tok(opt, "STRING"))
        fields["lines"] = LinesFormat(**values)

    def tail_ignore_lines(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        self.once(seen, "ignore_lines", item, "IGNORE … LINES")
        fields["ignore_lines"] = self.integer(_sub(item, "int_value"), 0, "IGNORE … LINES")

    def tail_set_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        fields["assignments"] = self.assignments(item, "SET")

    def tail_where_clause(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        fields["where"] = self.expr(_sub(item, "expr_text"))

    def tail_on_duplicate(self, item: Tree, seen: dict[str, Any], fields: dict[str, Any]) -> None:
        fields["on_duplicate"] = self.assignments(item, "ON DUPLICATE KEY UPDATE")

    def _start_pipeline(self, tree: Tree) -> StartPipeline:
        foreground = _sub(tree, "foreground")
        limit = None
        if foreground is not None and _sub(foreground, "int_value") is not None:
            limit = self.integer(_sub(foreground, "int_value"), 1, "LIMIT … BATCHES")
        return StartPipeline(
            self.name(_sub(tree, "name")),
            if_not_running=_sub(tree, "if_not_running") is not None,
            foreground=foreground is not None,
            limit_batches=limit,
        )

    def _start_all_pipelines(self, tree: Tree) -> StartAllPipelines:
        return StartAllPipelines()

    def _stop_pipeline(self, tree: Tree) -> StopPipeline:
        return StopPipeline(
            self.name(_sub(tree, "name")),
            if_running=_sub(tree, "if_running") is not None,
            detach=_tok(tree, "DETACH") is not None,
        )

    def _detach_pipeline(self, tree: Tree) -> DetachPipeline:
        return DetachPipeline(
            self.name(_sub(tree, "name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _stop_all_pipelines(self, tree: Tree) -> StopAllPipelines:
        return StopAllPipelines()

    def _drop_pipeline(self, tree: Tree) -> DropPipeline:
        return DropPipeline(
            self.name(_sub(tree, "name")), if_exists=_sub(tree, "if_exists") is not None
        )

    def _alter_pipeline(self, tree: Tree) -> AlterPipeline:
        fields: dict[str, Any] = {
            "name": self.name(_sub(tree, "name")),
            "if_exists": _sub(tree, "if_exists") is not None,
        }
        seen: dict[str, Any] = {}
        for item in tree.children:
            if not isinstance(item, Tree) or item.data in ("name", "if_exists"):
                continue
            if item.data == "alter_offsets":
                self.once(seen, "offsets", item, "OFFSETS")
                which = _tok(item, "EARLIEST", "LATEST")
                assert which is not None
                fields["offsets"] = which.type
            elif item.data == "alter_offsets_json":
                self.once(seen, "offsets", item, "OFFSETS")
                fields["offsets_json"] = self.json_object(
                    _tok(item, "STRING"), "OFFSETS", arrays=True
                )
            else:
                self.setting(item, seen, fields)
        return AlterPipeline(**fields)

    def _alter_pipeline_drop_file(self, tree: Tree) -> AlterPipelineDropFile:
        return AlterPipelineDropFile(
            self.name(_sub(tree, "name")),
            self.string(_tok(tree, "STRING")),
            if_exists=_sub(tree, "if_exists") is not None,
        )

    def _test_pipeline(self, tree: Tree) -> TestPipeline:
        limit = _sub(tree, "int_value")
        return TestPipeline(
            self.name(_sub(tree, "name")),
            limit=None if limit is None else self.integer(limit, 1, "LIMIT"),
        )

    def _show_pipelines(self, tree: Tree) -> ShowPipelines:
        return ShowPipelines()

    def _show_create_pipeline(self, tree: Tree) -> ShowCreatePipeline:
        return ShowCreatePipeline(
            self.name(_sub(tree, "name")), extended=_tok(tree, "EXTENDED") is not None
        )

    # -- connection links ---------------------------------------------------------------
    def _create_link(self, tree: Tree) -> CreateLink:
        name, kind = (self.name(n) for n in _subs(tree, "name"))
        fields: dict[str, Any] = {}
        seen: dict[str, Any] = {}
        for opt in _subs(tree, "opt_config", "opt_credentials", "opt_description"):
            word = {"opt_config": "CONFIG", "opt_credentials": "CREDENTIALS"}.get(
                str(opt.data), "DESCRIPTION"
            )
            self.once(seen, word, opt, word)
            tok = _tok(opt, "STRING")
            key = word.lower()
            fields[key] = self.string(tok) if key == "description" else self.json_object(tok, word)
        return CreateLink(
            name, kind.upper(), if_not_exists=_sub(tree, "if_not_exists") is not None, **fields
        )

    def _drop_link(self, tree: Tree) -> DropLink:
        return DropLink(self.name(_sub(tree, "name")), _sub(tree, "if_exists") is not None)

    def _show_links(self, tree: Tree) -> ShowLinks:
        on = _sub(tree, "name")
        return ShowLinks(None if on is None else self.name(on))

    def _show_create_link(self, tree: Tree) -> ShowCreateLink:
        return ShowCreateLink(self.name(_sub(tree, "name")))
