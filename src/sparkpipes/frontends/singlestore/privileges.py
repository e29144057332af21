"""Which privilege each statement needs (SingleStore's permission matrix, on sparkpipes'
statements), checked before it runs. Queries are checked on what they read, after the
sandbox parsed them (``SqlSession._spark_sql``); listings (``SHOW PIPELINES``, ``SHOW
TABLES``, ``SHOW PROCEDURES``, ``information_schema``) show what the user holds a privilege
on.

=========================================  ==========================================
statement                                  needs (on the object named, or wider)
=========================================  ==========================================
SELECT, EXPLAIN, DESCRIBE, SHOW CREATE TBL  SELECT on each table read
INSERT                                     INSERT on the table, SELECT on what it reads
DELETE / UPDATE                            DELETE / UPDATE on the table, and SELECT on
                                           it with a WHERE (UPDATE: always) and on what
                                           else its expressions read
CREATE TABLE / DROP TABLE                  CREATE / DROP
ALTER TABLE, OPTIMIZE, VACUUM              ALTER
CREATE INDEX, DROP INDEX                   INDEX
CREATE PIPELINE                            CREATE PIPELINE, and INSERT on its table (or
                                           EXECUTE on its procedure; CREATE and
                                           INSERT for an INFERRED pipeline's table,
                                           which may exist already); FILE READ
                                           to load the server's files (FS, HDFS), to
                                           name one in CONFIG (``*.location``), or to
                                           sign in as the server (S3, Kinesis
                                           without keys)
INFER PIPELINE | TABLE                     FILE READ as CREATE PIPELINE needs it
FLUSH EXTRACTOR POOLS                      nothing (there are none: nothing is done)
START / STOP / TEST PIPELINE               START PIPELINE
ALTER PIPELINE                             ALTER PIPELINE
DROP PIPELINE                              DROP PIPELINE
SHOW CREATE PIPELINE                       SHOW PIPELINE
CREATE PROCEDURE / DROP PROCEDURE          CREATE ROUTINE / ALTER ROUTINE; and what
                                           each body statement needs on its table
                                           (INSERT, DELETE, UPDATE: as the statement
                                           of its own), SELECT on each table it reads
SET GLOBAL                                 SUPER
users, GRANT, REVOKE                       ``sql.users``
=========================================  ==========================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkpipes.catalog.grants import PIPELINE, ROUTINE, TABLE, Access
from sparkpipes.config.procedure import ProcedureSpec
from sparkpipes.engine.calls import call_query, scalar_expressions
from sparkpipes.engine.changes import statement_query
from sparkpipes.errors import SparkpipesError
from sparkpipes.frontends.singlestore import ast as A
from sparkpipes.frontends.singlestore.lowering import to_spec
from sparkpipes.sources import SOURCES
from sparkpipes.util.localfiles import local_file_keys

Rule = Callable[[Access, Any], None]


def _table(privilege: str, attr: str = "name") -> Rule:
    def rule(access: Access, s: Any) -> None:
        access.require(privilege, getattr(s, attr))

    return rule


def _pipeline(privilege: str) -> Rule:
    def rule(access: Access, s: Any) -> None:
        access.require(privilege, s.name, kind="pipeline")

    return rule


def _any_on_table(access: Access, s: Any) -> None:
    if not access.may_any(TABLE, s.name):
        access.require("SELECT", s.name)


#: sources that read the server's own disk (and so any file the server may read)
LOCAL_FILES = ("FS", "HDFS")


def _reads_as_server(s: A.CreatePipeline) -> bool:
    """Whether the pipeline reads what only the server may: CONFIG or CREDENTIALS name a
    file of the server's disk the client opens (Kafka's ``ssl.ca.location``, a plugin's
    path option or URL, which a plugin takes from either:
    :mod:`sparkpipes.util.localfiles`), or give no login, so that the source signs in
    with the server's own (S3 or Kinesis without keys: the AWS default chain)."""
    options = []
    for part in ("config_json", "credentials_json"):
        try:
            options.append(getattr(s, part) if getattr(s, part.split("_")[0]) else {})
        except Exception:  # one that does not parse fails as the statement runs
            return False
    if any(local_file_keys(o) for o in options):
        return True
    try:
        return SOURCES.get(s.source.lower()).signs_in_as_server(*options)
    except SparkpipesError:  # an unknown source fails as the statement runs
        return False


def _reuses_secrets(s: A.CreatePipeline) -> bool:
    """Whether the statement gives secrets back as SHOW CREATE PIPELINE shows them
    (``<redacted>``), so that the stored ones are kept: decided on the spec the statement
    makes, as ``PipelineSpec.keep_secrets`` decides (JSON escapes, URLs of any component,
    the registry's included). One that does not lower fails as it runs; its text decides."""
    try:
        return bool(to_spec(s, {}).redacted_secrets())
    except SparkpipesError:
        return "redacted" in s.to_sql().lower()


def _create_pipeline(access: Access, s: A.CreatePipeline) -> None:
    access.require("CREATE PIPELINE", s.name, kind="pipeline")
    if s.source.upper() in LOCAL_FILES or _reads_as_server(s):
        access.require("FILE READ")
    if s.or_replace:
        access.require("DROP PIPELINE", s.name, kind="pipeline")
        if _reuses_secrets(s):  # using its sealed login elsewhere changes the pipeline
            access.require("ALTER PIPELINE", s.name, kind="pipeline")
    target = s.target
    table = s.name if target is None else target.name
    if target is not None and target.kind == "PROCEDURE":
        access.require("EXECUTE", target.name, kind="procedure")
        return
    if target is None:  # INFERRED: makes the table named after the pipeline, or loads it
        access.require("CREATE", table)
    _loads(access, s, table)


def _loads(access: Access, s: A.CreatePipeline, table: str) -> None:
    """What loading ``table`` as ``s`` says needs, as MySQL's statements of the same
    clauses do: ``INSERT``; ``DELETE`` too for ``REPLACE`` (a row of the same key is
    deleted); ``UPDATE`` and ``SELECT`` too for ``ON DUPLICATE KEY UPDATE`` (it changes
    stored rows, by expressions that read them)."""
    access.require("INSERT", table)
    if s.on_conflict == "REPLACE":
        access.require("DELETE", table)
    if s.on_duplicate:
        access.require("UPDATE", table)
        access.require("SELECT", table)


def _changes(access: Access, s: A.Delete | A.Update) -> None:
    """``DELETE``: DELETE on the table, ``UPDATE``: UPDATE; SELECT too when a condition
    or an assignment reads its rows, as MySQL asks (what else they read: as a query)."""
    access.require("DELETE" if isinstance(s, A.Delete) else "UPDATE", s.table)
    if isinstance(s, A.Update) or s.where is not None or s.join is not None:
        access.require("SELECT", s.table)


def _procedure(privilege: str) -> Rule:
    def rule(access: Access, s: Any) -> None:
        access.require(privilege, s.name, kind="procedure")

    return rule


def _create_procedure(access: Access, s: A.CreateProcedure) -> None:
    """``CREATE ROUTINE``; replacing one (``OR REPLACE``) changes what its pipelines load,
    so it needs ``ALTER ROUTINE`` on it as well, as MariaDB asks and as ``DROP PROCEDURE``
    does."""
    access.require("CREATE ROUTINE", s.name, kind="procedure")
    if s.or_replace:
        access.require("ALTER ROUTINE", s.name, kind="procedure")


def procedure_reads(access: Access, spec: ProcedureSpec) -> list[str]:
    """What a procedure's body needs of its author besides the routine privileges: each
    statement's write privileges are required here, as MySQL's statements of the same
    kind need them (REPLACE: INSERT and DELETE; ON DUPLICATE KEY UPDATE, UPDATE: UPDATE
    and SELECT; DELETE: DELETE and SELECT; CALL: EXECUTE on the procedure); the queries
    (the dialect) whose reads need SELECT are returned, to be checked as the batches run
    them."""
    reads = [f"SELECT ({v.default})" for v in spec.variables if v.default is not None]
    for s in spec.statements:
        if s.variable is not None:  # SET v = expr
            reads.append(f"SELECT ({s.query})")
            continue
        if s.call is not None:  # what the procedure called does, its author could; the
            access.require("EXECUTE", s.call, kind="procedure")  # rows it gets are read here
            reads.append(call_query(s))
            reads += [f"SELECT ({e})" for e in scalar_expressions(s)]
            continue
        needs = {
            "delete": ("DELETE", "SELECT"),
            "update": ("UPDATE", "SELECT"),
        }.get(s.change or "", ("INSERT",))
        if s.replace:
            needs = ("INSERT", "DELETE")
        elif s.update:
            needs = ("INSERT", "UPDATE", "SELECT")
        for privilege in needs:
            access.require(privilege, s.table)
        reads.append(statement_query(s))
    return reads


def _infer(access: Access, s: A.InferPipeline) -> None:
    """``INFER`` reads the source as the pipeline would (so by the same rules: ``FILE
    READ`` for a file of the server, a server file named in CONFIG, the server's own cloud
    login); it makes nothing."""
    p = s.pipeline
    if p.source.upper() in LOCAL_FILES or _reads_as_server(p):
        access.require("FILE READ")


def _load_data(access: Access, s: A.LoadData) -> None:
    """A one-off LOAD DATA loads a table (:func:`_loads`) as CREATE PIPELINE does, from
    its source by the same rules: ``FILE READ`` for a file of the server (INFILE), a server
    file named in CONFIG, or the server's own cloud login."""
    p = s.pipeline
    if p.source.upper() in LOCAL_FILES or _reads_as_server(p):
        access.require("FILE READ")
    target = s.pipeline.target
    if target is not None:
        _loads(access, s.pipeline, target.name)


def _server(privilege: str) -> Rule:
    def rule(access: Access, s: Any) -> None:
        access.require(privilege)

    return rule


RULES: dict[str, Rule] = {
    "CreatePipeline": _create_pipeline,
    "StartPipeline": _pipeline("START PIPELINE"),
    "StopPipeline": _pipeline("START PIPELINE"),
    "DetachPipeline": _pipeline("START PIPELINE"),
    "TestPipeline": _pipeline("START PIPELINE"),
    "DropPipeline": _pipeline("DROP PIPELINE"),
    "AlterPipeline": _pipeline("ALTER PIPELINE"),
    "AlterPipelineDropFile": _pipeline("ALTER PIPELINE"),
    "ShowCreatePipeline": _pipeline("SHOW PIPELINE"),
    "SetVariable": _server("SUPER"),
    "LoadData": _load_data,
    "InferPipeline": _infer,
    "CreateLink": _server("CREATE LINK"),
    "DropLink": _server("DROP LINK"),
    "ShowLinks": _server("SHOW LINK"),
    "ShowCreateLink": _server("SHOW LINK"),
    "CreateDatabase": _server("SUPER"),
    "CreateTable": _table("CREATE"),
    "DropTable": _table("DROP"),
    "AlterTableAddColumn": _table("ALTER", "table"),
    "AlterTableDropColumn": _table("ALTER", "table"),
    "AlterTableModifyColumn": _table("ALTER", "table"),
    "CreateIndex": _table("INDEX", "table"),
    "DropIndex": _table("INDEX", "table"),
    "OptimizeTable": _table("ALTER"),
    "Vacuum": _table("ALTER"),
    "ShowCreateTable": _any_on_table,
    "Insert": _table("INSERT", "table"),
    "Delete": _changes,
    "Update": _changes,
    "CreateProcedure": _create_procedure,
    "DropProcedure": _procedure("ALTER ROUTINE"),
}


def authorize(access: Access, stmt: Any) -> None:
    """Raise AccessDeniedError unless ``access`` may run ``stmt`` (its reads aside)."""
    if access.owner:
        return
    rule = RULES.get(type(stmt).__name__)
    if rule is not None:
        rule(access, stmt)
    if isinstance(stmt, A.DescribeTable) and (stmt.database or "").lower() != "information_schema":
        _any_on_table(access, stmt)


#: the privileges on a pipeline that show it (its definition, state, errors, files and
#: batches): ``CREATE PIPELINE``, held on the database to make pipelines, shows none
#: of the others' pipelines
SHOWS_PIPELINE = tuple(p for p in PIPELINE if p != "CREATE PIPELINE")


def sees_pipeline(access: Access, name: str) -> bool:
    """Whether a listing (``SHOW PIPELINES``, information_schema, the HTTP API and the
    console) shows pipeline ``name`` to the user: a privilege on it that acts on it."""
    return access.may_any(SHOWS_PIPELINE, name)


def sees_table(access: Access, name: str) -> bool:
    return access.may_any(TABLE, name)


def sees_procedure(access: Access, name: str) -> bool:
    """Whether ``SHOW PROCEDURES`` shows procedure ``name`` to the user (any routine
    privilege: a name is something to know too)."""
    return access.may_any(ROUTINE, name)
