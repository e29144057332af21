"""``SKIP DUPLICATE KEY ERRORS`` into a PostgreSQL or MariaDB table (the real servers on
127.0.0.1): the rows skipped as duplicate keys are listed in ``information_schema
.PIPELINES_ERRORS`` with their source partition and offset, as the Delta sink lists them
(``test_skip_duplicates``) and as SingleStore lists what a ``SKIP … ERRORS`` skipped;
exactly once, whether the batch's transaction fails and is retried, or the process fails
after the transaction committed; ``IGNORE`` lists nothing and keeps a key's first row."""

from __future__ import annotations

import pytest

import sparkpipes.engine.batch.protocol as protocol
import sparkpipes.sinks.database as database
from sparkpipes.errors import EngineError, SparkpipesError
from sparkpipes.frontends.singlestore.executor import SqlSession
from tests.integration.databases import ScratchDb

RECORDS = [
    '{"k": 1, "v": "a"}',
    '{"k": 2, "v": "b"}',
    '{"k": 1, "v": "c"}',
    '{"k": 3, "v": "d"}',
    '{"k": 3, "v": "e"}',
]


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request):
    scratch = ScratchDb(request.param)
    yield scratch
    scratch.drop()


def _lines(path, rows) -> list[int]:
    """Write JSON lines; the byte offset each starts at."""
    text, starts = "", []
    for r in rows:
        starts.append(len(text.encode()))
        text += r + "\n"
    path.write_text(text)
    return starts


def _pipeline(
    engine,
    db: ScratchDb,
    name: str,
    table: str,
    data,
    write: str,
    v: str = "VARCHAR(20)",
    **options: object,
) -> None:
    db.run(f"CREATE TABLE {db.name(table)} (k INT PRIMARY KEY, v {v})")
    db.run(f"INSERT INTO {db.name(table)} VALUES (2, 'old')")
    config = {
        "dialect": "postgresql" if db.kind == "postgresql" else "mysql",
        "host": db.host,
        "port": db.port,
        "database": db.database,
        "schema": db.schema if db.kind == "postgresql" else None,
        "user": db.user,
        "metadata_table": "kafka_connect_transaction_metadata",
    }
    engine.create_pipeline(
        name,
        source="fs",
        location=f"{data}/*.json",
        format="json",
        table=table,
        sink="database",
        on_duplicate_key=write,
        sink_config=config,
        sink_credentials={"password": db.password},
        **options,
    )


def _listed(sql: SqlSession, name: str) -> list[tuple]:
    return [
        tuple(r)
        for r in sql.execute(
            "SELECT BATCH_SOURCE_PARTITION_ID, BATCH_OFFSET, ERROR_MESSAGE FROM "
            f"information_schema.PIPELINES_ERRORS WHERE PIPELINE_NAME = '{name}' "
            "ORDER BY BATCH_OFFSET"
        )[-1].rows
    ]


def _fails_once(point: str):
    """A crash point that fails the batch (transiently: it is retried) the first time."""
    hits: list[str] = []

    def crash(name: str) -> None:
        if name == point and not hits:
            hits.append(name)
            raise EngineError(f"failed at {name}")

    return crash, hits


@pytest.mark.parametrize("failure", ["none", "in_database_transaction", "after_commit"])
def test_skipped_duplicates_are_listed_once_with_partition_and_offset(
    engine, db, tmp_path, monkeypatch, failure
):
    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(data / "a.json", RECORDS)
    _pipeline(engine, db, "dk", "keyed", data, "skip_duplicates")
    if failure != "none":
        crash, hits = _fails_once(failure)
        where = database if failure == "in_database_transaction" else protocol
        monkeypatch.setattr(where, "crash_point", crash)
    engine.run_batches("dk", 3, until_idle=True)
    if failure != "none":
        assert hits == [failure]  # the batch failed there once, and was retried

    assert db.rows(f"SELECT k, v FROM {db.name('keyed')} ORDER BY k") == [
        (1, "a"),
        (2, "old"),
        (3, "d"),
    ]
    listed = _listed(SqlSession(engine), "dk")
    where = str(data / "a.json")
    assert [(p, o) for p, o, _ in listed] == [
        (where, str(starts[1])),
        (where, str(starts[2])),
        (where, str(starts[4])),
    ]
    assert "Duplicate entry '2'" in listed[0][2] and "in the table already" in listed[0][2]
    assert "Duplicate entry '1'" in listed[1][2] and "twice in the batch" in listed[1][2]
    assert "Duplicate entry '3'" in listed[2][2] and "twice in the batch" in listed[2][2]
    assert all("SKIP DUPLICATE KEY ERRORS" in m for _, _, m in listed)
    assert [e["offset"] for e in engine.errors("dk")] == [starts[1], starts[2], starts[4]]


def test_an_attempt_that_finds_its_batch_committed_keeps_the_winners_list(engine, db, tmp_path):
    """Two attempts of one batch (as a stale runner's and the one that committed): the
    attempt whose transaction finds the batch there writes nothing to the list, where its
    own errors (a line it could not parse) would replace the winner's skipped rows."""
    data = tmp_path / "d"
    data.mkdir()
    starts = _lines(data / "a.json", ['{"k": 1, "v": "a"}', "{not json", '{"k": 1, "v": "b"}'])
    _pipeline(engine, db, "tw", "twice", data, "skip_duplicates", skip_parser_errors=True)
    runner = engine._runner("tw")
    plan = runner.plan()
    assert runner.commit(runner.extract(plan)).state == "Succeeded"
    listed = [(e["offset"], e["reason"]) for e in engine.errors("tw")]
    assert [o for o, _ in listed] == starts[1:]  # the line not parsed, the duplicate
    assert runner.commit(runner.extract(plan, attempt=2), attempt=2).state == "Replayed"
    assert [(e["offset"], e["reason"]) for e in engine.errors("tw")] == listed


def test_ignore_keeps_a_keys_first_row_and_lists_nothing(engine, db, tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    _lines(data / "a.json", RECORDS)
    _pipeline(engine, db, "ig", "ignoring", data, "ignore")
    engine.run_batches("ig", 3, until_idle=True)
    assert db.rows(f"SELECT k, v FROM {db.name('ignoring')} ORDER BY k") == [
        (1, "a"),
        (2, "old"),
        (3, "d"),
    ]
    assert engine.errors("ig") == []


@pytest.mark.parametrize(
    "column, value",
    [
        ("VARCHAR(5)", '"waytoolong"'),
        ("VARCHAR(20) CHECK (v <> 'bad')", '"bad"'),
    ],
    ids=["too_long", "check"],
)
def test_a_row_refused_otherwise_than_as_a_duplicate_key_fails_the_batch(
    engine, db, tmp_path, column, value
):
    """SingleStore's SKIP DUPLICATE KEY ERRORS skips duplicate keys and nothing else: a
    value the column does not take (too long for it, which MariaDB's ``INSERT IGNORE``
    would clip; one its CHECK refuses) fails the batch, nothing of it is loaded or
    listed. The same batch without that row has its duplicates skipped and listed."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.mkdir()
    good.mkdir()
    records = ['{"k": 1, "v": "a"}', '{"k": 2, "v": "b"}', '{"k": 1, "v": "c"}']
    _lines(bad / "a.json", [*records, f'{{"k": 4, "v": {value}}}'])
    starts = _lines(good / "a.json", records)
    _pipeline(engine, db, "bad", "refusing", bad, "skip_duplicates", column)
    with pytest.raises(SparkpipesError):
        engine.run_batches("bad", 3, until_idle=True)
    assert db.rows(f"SELECT k, v FROM {db.name('refusing')} ORDER BY k") == [(2, "old")]
    (failure,) = engine.errors("bad")  # the batch's failure, no row listed as skipped
    assert "SKIP DUPLICATE KEY ERRORS" not in failure["reason"]
    assert "into table refusing" in failure["reason"]

    _pipeline(engine, db, "good", "taking", good, "skip_duplicates", column)
    engine.run_batches("good", 3, until_idle=True)
    assert db.rows(f"SELECT k, v FROM {db.name('taking')} ORDER BY k") == [(1, "a"), (2, "old")]
    assert [e["offset"] for e in engine.errors("good")] == [starts[1], starts[2]]


def test_null_into_not_null_fails_the_transaction_not_listed_as_a_duplicate(db):
    """A NULL into a NOT NULL column (which the tasks refuse before a pipeline's rows get
    here, so this asks ``insert_skipping`` itself), which MariaDB's ``INSERT IGNORE``
    would store as '' and list nothing for, fails; a duplicate key is still skipped and
    listed."""
    import pyarrow as pa
    import sqlalchemy as sa

    from sparkpipes.sinks.database_duplicates import insert_skipping
    from sparkpipes.sinks.database_load import OFFSET_COLUMN, PARTITION_COLUMN, Writes

    db.run(f"CREATE TABLE {db.name('nn')} (k INT PRIMARY KEY, v VARCHAR(20) NOT NULL)")
    db.run(f"INSERT INTO {db.name('nn')} VALUES (2, 'old')")
    driver = "postgresql+psycopg2" if db.kind == "postgresql" else "mysql+pymysql"
    engine = sa.create_engine(f"{driver}://{db.user}:{db.password}@{db.hostport}/{db.database}")
    dialect = "postgresql" if db.kind == "postgresql" else "mysql"
    schema = db.schema if db.kind == "postgresql" else None
    target = sa.table("nn", sa.column("k"), schema=schema)

    def load(*rows: tuple[int, str | None]) -> list[dict]:
        table = pa.table(
            {
                "k": pa.array([k for k, _ in rows], pa.int32()),
                "v": pa.array([v for _, v in rows], pa.string()),
                PARTITION_COLUMN: ["f"] * len(rows),
                OFFSET_COLUMN: pa.array(range(len(rows)), pa.int64()),
            }
        )
        with engine.begin() as c:
            return insert_skipping(c, dialect, target, table, Writes("ignore", ("k",)), "nn")

    try:
        with pytest.raises(Exception, match=r"(?i)null"):  # the driver's IntegrityError
            load((2, "dup"), (3, "c"), (4, None))
        assert db.rows(f"SELECT k, v FROM {db.name('nn')} ORDER BY k") == [(2, "old")]
        listed = load((2, "dup"), (3, "c"))
        assert [e["offset"] for e in listed] == [0]
        assert db.rows(f"SELECT k, v FROM {db.name('nn')} ORDER BY k") == [(2, "old"), (3, "c")]
    finally:
        engine.dispose()
