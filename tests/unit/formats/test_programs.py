"""Record programs (``WITH TRANSFORM``): SingleStore's built-in jq (``memsql://json``) as
the jq command reads its arguments, sandboxed, and what the decoder after it reports."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pytest

from sparkpipes.config import CsvOptions, FieldMapping, RecordProgram
from sparkpipes.errors import ConfigError
from sparkpipes.formats import build_decoder
from sparkpipes.formats.programs import build_program

JQ = "memsql://json"


def values(*items):
    return pa.array([i if i is None else i.encode() for i in items], pa.binary())


def jq(arguments: str):
    return build_program(RecordProgram(JQ, "", arguments))


def test_raw_tsv_lines_as_the_flight_demos_write_them():
    """``-r "[…] | @tsv"``: one tab-separated line per record; a missing key is empty."""
    ran = jq('-r "[.icao24, .callsign, .lon] | @tsv"').run(
        values('{"icao24": "a1", "callsign": "KLM1", "lon": 4.5}', '{"icao24": "b2"}')
    )
    assert ran.values.to_pylist() == [b"a1\tKLM1\t4.5", b"b2\t\t"]
    assert ran.origin.to_pylist() == [0, 1] and ran.errors == ()


def test_outputs_map_back_to_the_record_they_came_from():
    """Several outputs (``.[]``), none (``select``), a string with a newline (two
    lines of jq's output), JSON text without ``-r``; each names its input record."""
    ran = jq("'.items[] | select(. != 0)'").run(
        values('{"items": [1, "x\\ny", 0]}', '{"items": []}', '{"items": [{"k": true}]}')
    )
    assert ran.values.to_pylist() == [b"1", b'"x\\ny"', b'{"k":true}']
    assert ran.origin.to_pylist() == [0, 0, 2]
    raw = jq("-r .s").run(values('{"s": "one\\ntwo"}', '{"s": 3}'))
    assert (raw.values.to_pylist(), raw.origin.to_pylist()) == ([b"one", b"two", b"3"], [0, 0, 1])
    joined = jq("-j '.a, .b'").run(values('{"a": "x", "b": 1}'))
    assert joined.values.to_pylist() == [b"x1"]


def test_a_record_jq_fails_on_is_an_error_of_that_record_only():
    ran = jq("-c '.a + 1'").run(values('{"a": 1}', "not json", '{"a": "s"}', None, '{"a": 2}'))
    assert ran.values.to_pylist() == [b"2", b"3"] and ran.origin.to_pylist() == [0, 4]
    reasons = {e.index: e.reason for e in ran.errors}
    assert set(reasons) == {1, 2, 3}
    assert reasons[1].startswith("jq: ") and "cannot be added" in reasons[2]
    assert "no value" in reasons[3]


def test_flags_and_arguments_as_on_the_command_line():
    ran = jq("-rc --arg sep : --argjson n 2 '\"\\(.a)\\($sep)\\(.a * $n)\"'").run(
        values('{"a": 3}')
    )
    assert ran.values.to_pylist() == [b"3:6"]
    assert jq("-S -c .").run(values('{"b": 1, "a": 2}')).values.to_pylist() == [b'{"a":2,"b":1}']
    assert jq("").run(values('{"a": 1}')).values.to_pylist() == [b'{"a":1}']


@pytest.mark.parametrize(
    "arguments, error",
    [
        ("-s .", "jq option -s is not supported"),
        ("-n 1", "jq option -n is not supported"),
        ("--rawfile f /etc/passwd .", "jq option --rawfile is not supported"),
        ("-f prog.jq", "jq option -f is not supported"),
        ("-L /tmp .", "jq option -L is not supported"),
        (". .a", "hold 2 filters"),
        ("'.a |'", "does not compile"),
        ("'include \"evil\"; .'", "does not compile"),
        ("'import \"evil\" as e; .'", "does not compile"),
        ("'\"unterminated", "do not split into words"),
    ],
)
def test_arguments_that_read_files_or_do_not_make_sense_are_refused(arguments, error):
    with pytest.raises(ConfigError, match=error):
        jq(arguments)


def test_the_filter_cannot_reach_the_servers_environment_or_stop_the_stream(monkeypatch):
    monkeypatch.setenv("SPARKPIPES_SECRET_KEY", "s3cret")
    for text in ("env", "$ENV", '"\\($ENV)"', "def f: $ENV; f", "env.SPARKPIPES_SECRET_KEY"):
        out = jq(f"-c '{text}'").run(values("{}")).values.to_pylist()
        assert b"s3cret" not in out[0], text
    assert "s3cret" in os.environ["SPARKPIPES_SECRET_KEY"]
    for text in ("input", "[inputs]", "halt", "halt_error"):
        ran = jq(text).run(values('{"a": 1}', '{"a": 2}'))
        assert [e.index for e in ran.errors] == [0, 1], text  # every record had its own turn
    assert jq("-c '.a | debug'").run(values('{"a": 1}')).values.to_pylist() == [b"1"]


def test_uris_of_programs_to_download_or_run_are_refused():
    for uri in ("http://download.memsql.com/transform.tar.gz", "file://localhost/t.py", "x.py"):
        with pytest.raises(ConfigError, match="does not download or run programs"):
            build_program(RecordProgram(uri, "transform.py", ""))
    assert build_program(RecordProgram("MEMSQL://JSON", "", ".")) is not None


def test_the_decoder_after_the_program_names_input_records():
    """Kept rows and errors (the program's and the decoder's) are by input record, so the
    errors view shows the source's partition and offset."""
    schema = pa.schema([("a", pa.string()), ("n", pa.int32())])
    d = build_decoder(
        "csv",
        schema,
        [FieldMapping("a", ("a",)), FieldMapping("n", ("n",))],
        CsvOptions(delimiter="\t", quote=None, escape="\\"),
        program=RecordProgram(JQ, "", '-r ".rows[] | [.a, .n] | @tsv"'),
    )
    out = d.decode(
        values(
            '{"rows": [{"a": "x", "n": 1}, {"a": "y", "n": "z"}]}',
            "{",
            '{"rows": [{"a": "w", "n": 2}]}',
        )
    )
    assert out.table.to_pylist() == [{"a": "x", "n": 1}, {"a": "w", "n": 2}]
    assert out.kept.to_pylist() == [0, 2]
    assert sorted(e.index for e in out.errors) == [0, 1]  # "z" is no INT; "{" no JSON
    again = pickle.loads(pickle.dumps(d))  # as it reaches an executor
    assert again.decode(values('{"rows": [{"a": "v", "n": 3}]}')).table.num_rows == 1


def test_a_program_takes_records_of_text_not_columns():
    with pytest.raises(ConfigError, match="WITH TRANSFORM takes records of text"):
        build_decoder("parquet", pa.schema([("a", pa.string())]), program=RecordProgram(JQ))


def test_each_record_is_one_json_value_of_its_own():
    """A record cannot reach into its neighbours: a value cut across records, or two
    values in one, is an error of that record, and the records around it load as they
    are (no row is credited to another record's offset)."""
    ran = jq("-c .").run(
        values(
            '{"a": "attacker", "b": ',
            '{"a": "victim", "b": "victim-data"}',
            '} {"a": "forged1"} {"a": "forged2"}',
            '{"a": "OK"} {"a": 5}',
        )
    )
    assert ran.values.to_pylist() == [b'{"a":"victim","b":"victim-data"}']
    assert ran.origin.to_pylist() == [1]
    assert [e.index for e in ran.errors] == [0, 2, 3]
    assert "holds 2 JSON values" in ran.errors[2].reason


def test_a_filter_that_runs_away_costs_its_chunk_not_the_worker(monkeypatch):
    """The records run in a child with CPU-time and memory limits: a filter that loops
    or grows without end fails the chunk (TransformError, the batch fails) in bounded
    time, and the child sees no environment."""
    import time

    from sparkpipes.errors import TransformError
    from sparkpipes.formats import jq as jq_module

    monkeypatch.setattr(jq_module, "CPU_SECONDS", 1)
    started = time.monotonic()
    with pytest.raises(TransformError, match="ran out of its 1 s of CPU time"):
        jq("'last(range(1e15))'").run(values("{}"))
    monkeypatch.setattr(jq_module, "MEMORY_BYTES", 256 << 20)
    with pytest.raises(TransformError, match=r"ran out of|died"):
        jq("'[range(1e9)] | length'").run(values("{}"))
    assert time.monotonic() - started < 60
    monkeypatch.setenv("R16_CANARY", "s3cret")
    out = jq('-c \'[env, $ENV, ("m" | try modulemeta catch "refused")]\'').run(values("{}"))
    assert out.values.to_pylist() == [b'[{},{},"refused"]']


def test_what_a_filter_writes_back_is_bounded_and_must_be_its_own():
    """A chunk's answers are at most 16 MiB or four times its input: one small record a
    filter turns into millions fails the batch instead of the worker's memory (review
    R17); a filter that closes the wrapper around it is an error of the record."""
    from sparkpipes.errors import TransformError

    with pytest.raises(TransformError, match="wrote more than 16 MiB"):
        jq("-c 'range(3000000)'").run(values('{"a": 1}'))
    escaped = jq("""'1) ] | label $o | "abcdef", break $o, try [ (.'""").run(values("{}"))
    assert escaped.values.to_pylist() == []
    assert [e.reason for e in escaped.errors] == ["jq: the filter is not one jq expression"]
