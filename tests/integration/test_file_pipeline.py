"""The FS source through the engine: byte offsets, files appearing and growing, a last
line loaded only once it is complete."""

from __future__ import annotations

import json


def test_files_added_and_appended_are_loaded_once(engine, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.json").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(5)))
    engine.create_table("t", "id BIGINT, __source_partition STRING, __source_offset BIGINT")
    engine.create_pipeline(
        "files", source="fs", location=str(data / "*.json"), table="t", provenance=True
    )
    engine.run_batches("files", 3, until_idle=True)
    (data / "b.json").write_text('{"id": 100}\n{"id": 101}\n{"id": 1')  # last line incomplete
    with open(data / "a.json", "a") as f:
        f.write('{"id": 5}\n')
    engine.run_batches("files", 3, until_idle=True)
    with open(data / "b.json", "a") as f:
        f.write("02}\n")
    engine.run_batches("files", 3, until_idle=True)

    t = engine.table_arrow("t")
    assert sorted(t.column("id").to_pylist()) == [0, 1, 2, 3, 4, 5, 100, 101, 102]
    offsets = engine.offsets("files")
    assert offsets[str(data / "a.json")] == {"byte": 60}
    assert offsets[str(data / "b.json")] == {"byte": 36}
    rows = {(r["__source_partition"], r["__source_offset"]): r["id"] for r in t.to_pylist()}
    assert rows[(str(data / "b.json"), 24)] == 102  # the byte where its line begins


def test_csv_files_with_a_bad_line_skipped_into_the_errors_store(engine, tmp_path):
    (tmp_path / "x.csv").write_text("1,a\n2,b\nthree,c\n4,d\n")
    engine.create_table("t", "n INT, s STRING")
    engine.create_pipeline(
        "csvp",
        source="fs",
        location=str(tmp_path / "*.csv"),
        table="t",
        format="csv",
        skip_parser_errors=True,
    )
    engine.run_batches("csvp", 2, until_idle=True)
    assert sorted(engine.table_arrow("t").column("n").to_pylist()) == [1, 2, 4]
    (err,) = engine.errors("csvp")
    assert err["partition"] == str(tmp_path / "x.csv") and err["offset"] == 8  # its byte
    assert err["excerpt"] == "three,c" and "column 'n'" in err["reason"]


def test_a_record_that_fails_the_batch_is_recorded_like_a_skipped_one(engine, tmp_path):
    """One ERROR_TYPE per error, whether the record was skipped or failed the batch."""
    import pytest

    from sparkpipes.errors import DecodeError

    (tmp_path / "x.csv").write_text("1,a\nthree,c\n")
    engine.create_table("t", "n INT, s STRING")
    for name, skip in (("skips", True), ("fails", False)):
        engine.create_pipeline(
            name,
            source="fs",
            location=str(tmp_path / "*.csv"),
            table="t",
            format="csv",
            skip_parser_errors=skip,
        )
    engine.run_batches("skips", 2, until_idle=True)
    with pytest.raises(DecodeError, match=r"file '.*x\.csv' byte 4: "):
        engine.run_batch("fails")
    (skipped,), (failed,) = engine.errors("skips"), engine.errors("fails")
    for err in (skipped, failed):
        assert (err["kind"], err["code"], err["offset"]) == ("parse", "SP300", 4)
        assert err["partition"] == str(tmp_path / "x.csv")
    assert engine.pipeline("fails").state == "Error"


def test_status_lag_is_true_or_unknown_never_a_false_zero(engine, tmp_path):
    from sparkpipes.cli import status_rows

    (tmp_path / "x.json").write_text("".join(f'{{"a": {i}}}\n' for i in range(7)))
    engine.create_table("t", "a BIGINT")
    engine.create_pipeline("never_run", source="fs", location=str(tmp_path / "*.json"), table="t")
    engine.create_pipeline(
        "no_broker", source="kafka", location="127.0.0.1:1/nothing_listens", table="t"
    )
    cols, rows = status_rows(engine)
    lag = {r[0]: r[cols.index("Lag")] for r in rows}
    assert lag == {"never_run": 63, "no_broker": "unknown"}  # files: the bytes not loaded
    engine.run_batches("never_run", 2, until_idle=True)
    assert dict((r[0], r[cols.index("Lag")]) for r in status_rows(engine)[1])["never_run"] == 0
