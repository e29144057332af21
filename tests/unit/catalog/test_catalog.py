import datetime as dt

import pyarrow as pa
import pytest

from sparkpipes.catalog import Catalog
from sparkpipes.errors import AlreadyExistsError, CatalogError, NotFoundError


@pytest.fixture
def cat(tmp_path):
    c = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    yield c
    c.close()


def test_tables_and_pipelines_round_trip(cat):
    schema = pa.schema([("a", pa.int64())])
    cat.tables.create("t", "/x", "`a` BIGINT", schema)
    assert cat.tables.get("t").schema == schema
    with pytest.raises(AlreadyExistsError):
        cat.tables.create("t", "/x", "", schema)
    cat.pipelines.create(
        "p", "id1", "kafka", "t", {"name": "p"}, {"sasl.password": "pw"}, "Stopped"
    )
    assert cat.pipelines.get("p").definition == {"name": "p"}
    assert cat.pipelines.credentials("p") == {"sasl.password": "pw"}
    with pytest.raises(NotFoundError, match="pipeline 'q' does not exist"):
        cat.pipelines.get("q")
    cat.pipelines.update("p", state="Running")
    assert cat.pipelines.get("p").state == "Running"


def test_errors_of_a_retried_batch_replace_not_duplicate(cat):
    errs = [{"partition": "0", "offset": 5, "reason": "bad"}]
    cat.batches.replace_errors("id1", "p", 3, errs)
    cat.batches.replace_errors(
        "id1", "p", 3, [*errs, {"partition": "1", "offset": 2, "reason": "x"}]
    )
    assert [(e["partition"], e["offset"]) for e in cat.batches.errors("id1")] == [
        ("0", 5),
        ("1", 2),
    ]


def test_batches_and_last_succeeded(cat):
    now = dt.datetime.now()
    cat.batches.record(
        pipeline_id="i",
        pipeline_name="p",
        batch_id=1,
        attempt=1,
        state="Succeeded",
        started_at=now,
        offsets={"0": 3},
    )
    cat.batches.record(
        pipeline_id="i",
        pipeline_name="p",
        batch_id=2,
        attempt=1,
        state="Failed",
        started_at=now,
        error="boom",
    )
    assert cat.batches.last_succeeded("i") == (1, {"0": 3})
    assert [b["state"] for b in cat.batches.list("i")] == ["Succeeded", "Failed"]


def test_unreachable_catalog_is_a_clear_error():
    with pytest.raises(CatalogError, match="cannot open catalog"):
        Catalog("postgresql+psycopg2://nobody:secretpw@127.0.0.1:1/x")
    try:
        Catalog("postgresql+psycopg2://nobody:secretpw@127.0.0.1:1/x")
    except CatalogError as e:
        assert "secretpw" not in str(e)


def test_a_catalog_of_another_schema_version_is_refused(tmp_path):
    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'v.db'}"
    Catalog(url).close()
    db = sa.create_engine(url)
    with db.begin() as c:
        c.execute(sa.text("UPDATE sp_meta SET value = '0' WHERE key = 'schema'"))
    db.dispose()
    from sparkpipes.catalog.schema import SCHEMA_VERSION

    want = f"has schema version 0; this sparkpipes needs {SCHEMA_VERSION}"
    with pytest.raises(CatalogError, match=want):
        Catalog(url)


def test_the_newest_batches_and_rows_loaded_are_read_without_the_whole_history(cat):
    cat.pipelines.create("p", "id1", "kafka", "t", {}, {}, "Running")
    t0 = dt.datetime(2026, 1, 1)
    for b in range(1, 31):
        for attempt, state in (
            ((1, "Failed"), (2, "Succeeded")) if b % 10 == 0 else ((1, "Succeeded"),)
        ):
            cat.batches.record(
                pipeline_id="id1",
                pipeline_name="p",
                batch_id=b,
                attempt=attempt,
                state=state,
                started_at=t0 + dt.timedelta(seconds=b),
                rows=b if state == "Succeeded" else 999,
            )
    last = cat.batches.list("id1", last=4)
    assert [(x["batch_id"], x["attempt"]) for x in last] == [(28, 1), (29, 1), (30, 1), (30, 2)]
    assert len(cat.batches.list("id1")) == 33
    rows, finished = cat.batches.loaded("id1")
    assert rows == sum(range(1, 31)) and finished is not None
    assert cat.batches.loaded("nope") == (0, None)


def test_the_newest_errors_are_read_alone(cat):
    for b in range(1, 6):
        cat.batches.replace_errors(
            "id1", "p", b, [{"partition": "0", "offset": b, "reason": f"r{b}"}]
        )
    assert [e["reason"] for e in cat.batches.errors("id1", last=2)] == ["r4", "r5"]
    assert len(cat.batches.errors("id1")) == 5 and cat.batches.errors("other", last=3) == []


def test_auto_increment_ranges_never_overlap_and_pass_given_values(tmp_path, cat):
    """Each reservation is a range no other got, even from another engine on the same
    catalog; ``at_least`` moves the counter past a value rows gave; dropping the table
    starts it again."""
    cat.tables.create("t", "/x", "`a` BIGINT", pa.schema([("a", pa.int64())]))
    other = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        assert cat.tables.reserve_ids("t", 3) == 1  # 1, 2, 3
        assert other.tables.reserve_ids("t", 2) == 4  # 4, 5
        assert cat.tables.reserve_ids("t", 1, at_least=100) == 100
        assert other.tables.reserve_ids("t", 1, at_least=7) == 101
    finally:
        other.close()
    cat.tables.drop("t")
    cat.tables.create("t", "/x", "`a` BIGINT", pa.schema([("a", pa.int64())]))
    assert cat.tables.reserve_ids("t", 1) == 1
