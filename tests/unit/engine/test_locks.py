"""A lock per pipeline: reads (views, status) never wait for a batch in flight; a batch
of one pipeline does not wait for another's."""

import threading
import time

import pyarrow as pa


def test_views_and_offsets_do_not_wait_for_a_running_batch(engine, tmp_path):
    (tmp_path / "a.json").write_text('{"a": 1}\n')
    engine.create_table("t", pa.schema([("a", pa.int64())]))
    for name in ("p", "q"):
        engine.create_pipeline(name, source="fs", location=str(tmp_path / "*.json"), table="t")
    held, release = threading.Event(), threading.Event()

    def batch_in_flight():
        with engine.rt.lock("p"):  # what a running batch of p holds
            held.set()
            release.wait(30)

    t = threading.Thread(target=batch_in_flight)
    t.start()
    try:
        assert held.wait(5)
        t0 = time.monotonic()
        offsets = engine.information_schema("PIPELINES_OFFSETS")
        files = engine.information_schema("PIPELINES_FILES")
        engine.offsets("p")
        engine.set_offsets("q", "latest")  # another pipeline's write is not blocked either
        assert time.monotonic() - t0 < 5
        assert offsets.num_rows == 2 and files.num_rows == 2
        assert engine.offsets("q") == {str(tmp_path / "a.json"): {"byte": 9}}
    finally:
        release.set()
        t.join()
