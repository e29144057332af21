"""What a SingleStore pipeline loads, checked against SingleStore's documented semantics
(``LOAD DATA``'s CSV rules), through the real broker, Spark and Delta."""

from __future__ import annotations

import pytest

from sparkpipes.frontends.singlestore.executor import SqlSession


@pytest.fixture
def sql(engine):
    session = SqlSession(engine)
    return lambda text: session.execute(text)[-1]


def rows(result):
    return [tuple(r) for r in result.rows]


def test_the_kafka_quickstart_loads_each_message_as_one_csv_record(sql, broker, topic):
    """SingleStore's Kafka quickstart: a pipeline with neither FORMAT nor FIELDS loads
    CSV with LOAD DATA's defaults, so each plain-text message is one row."""
    words = ["the quick", "brown fox", "jumped over", "the lazy dog"]
    broker.produce(topic, words, partitions=1)
    sql("CREATE TABLE messages (id text)")
    sql(
        f"CREATE PIPELINE quickstart_kafka AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "INTO TABLE messages"
    )
    assert "4 rows loaded" in sql("START PIPELINE quickstart_kafka FOREGROUND").message
    assert sorted(r[0] for r in rows(sql("SELECT id FROM messages"))) == sorted(words)
    shown = sql("SHOW CREATE PIPELINE quickstart_kafka").rows[0][1]
    assert "FORMAT CSV FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\'" in shown


def test_csv_defaults_and_escapes_load_as_load_data_reads_them(sql, tmp_path):
    """Tab-separated, not enclosed, escaped by a backslash: a quote is an ordinary
    character, ``\\t`` a tab, ``\\N`` NULL, an escaped tab part of its field."""
    (tmp_path / "a.tsv").write_text(
        '1\tplain\t\\N\n2\ttab\\there\t5\n3\t"quoted"\t7\n4\tescaped\\\ttab\t9\n'
    )
    sql("CREATE TABLE t (id INT, s TEXT, n INT)")
    sql(f"CREATE PIPELINE tp AS LOAD DATA FS '{tmp_path}/*.tsv' INTO TABLE t")
    (tmp_path / "d").mkdir()  # a bare @ in the column list discards its field
    (tmp_path / "d" / "a.tsv").write_text("1\tdrop\tx\tdrop too\t2\n")
    sql("CREATE TABLE d (id INT, s TEXT, n INT)")
    sql(f"CREATE PIPELINE dp AS LOAD DATA FS '{tmp_path}/d/*.tsv' INTO TABLE d (id, @, s, @, n)")
    sql("START PIPELINE dp FOREGROUND")
    assert rows(sql("SELECT id, s, n FROM d")) == [(1, "x", 2)]
    sql("START PIPELINE tp FOREGROUND")
    assert rows(sql("SELECT id, s, n FROM t ORDER BY id")) == [
        (1, "plain", None),
        (2, "tab\there", 5),
        (3, '"quoted"', 7),
        (4, "escaped\ttab", 9),
    ]


def test_enclosed_fields_with_delimiters_doubled_quotes_and_an_escaped_delimiter(sql, tmp_path):
    (tmp_path / "b.csv").write_text('1,"a,b",x\n2,"say ""hi""",y\n3,c\\,d,z\n4,"",w\n')
    sql("CREATE TABLE c (id INT, s TEXT, k TEXT)")
    sql(
        f"CREATE PIPELINE cp AS LOAD DATA FS '{tmp_path}/*.csv' INTO TABLE c "
        "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
    )
    sql("START PIPELINE cp FOREGROUND")
    assert rows(sql("SELECT id, s, k FROM c ORDER BY id")) == [
        (1, "a,b", "x"),
        (2, 'say "hi"', "y"),
        (3, "c,d", "z"),
        (4, "", "w"),
    ]
    shown = sql("SHOW CREATE PIPELINE cp").rows[0][1]
    assert "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\'" in shown


def test_a_comma_delimited_file_without_enclosure_keeps_its_quotes(sql, tmp_path):
    """``FIELDS TERMINATED BY ','`` alone does not enclose: SingleStore keeps the quotes
    (a field with a comma inside quotes is two fields, so the record has too many)."""
    (tmp_path / "q.csv").write_text('1,"x"\n2,"y,z"\n')
    sql("CREATE TABLE q (id INT, s TEXT)")
    sql(
        f"CREATE PIPELINE qp AS LOAD DATA FS '{tmp_path}/*.csv' SKIP PARSER ERRORS "
        "INTO TABLE q FIELDS TERMINATED BY ','"
    )
    sql("START PIPELINE qp FOREGROUND")
    assert rows(sql("SELECT id, s FROM q")) == [(1, '"x"')]
    errors = sql("SELECT ERROR_MESSAGE FROM information_schema.PIPELINES_ERRORS")
    assert "expected 2 fields, found 3" in rows(errors)[0][0]


def test_a_duplicate_key_fails_the_batch_of_a_plain_into_table(sql, broker, topic):
    """Without REPLACE, IGNORE, SKIP DUPLICATE KEY ERRORS or ON DUPLICATE KEY UPDATE, a
    row whose primary key the table holds (or an earlier row of the batch) fails the
    batch, as SingleStore's "Duplicate entry … for key 'PRIMARY'": nothing of it is
    loaded and the offsets stay. Into a table without a primary key every row loads."""
    broker.produce(topic, ['{"k": 1, "v": "a"}', '{"k": 2, "v": "b"}'], partitions=1)
    sql("CREATE TABLE pk (k INT, v TEXT, PRIMARY KEY (k))")
    sql(
        f"CREATE PIPELINE pkp AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "MAX_RETRIES_PER_BATCH_PARTITION 0 INTO TABLE pk FORMAT JSON"
    )
    assert "2 rows loaded" in sql("START PIPELINE pkp FOREGROUND").message
    broker.produce(topic, ['{"k": 3, "v": "c"}', '{"k": 1, "v": "again"}'])
    with pytest.raises(Exception, match=r"Duplicate entry '1' for key 'PRIMARY'.*in the table"):
        sql("START PIPELINE pkp FOREGROUND")
    assert rows(sql("SELECT k, v FROM pk ORDER BY k")) == [(1, "a"), (2, "b")]
    sql("CREATE TABLE pk2 (k INT, v TEXT, PRIMARY KEY (k))")
    sql(
        f"CREATE PIPELINE pkq AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "MAX_RETRIES_PER_BATCH_PARTITION 0 INTO TABLE pk2 FORMAT JSON"
    )
    with pytest.raises(
        Exception, match=r"Duplicate entry '1' for key 'PRIMARY'.*twice in the batch"
    ):
        sql("START PIPELINE pkq FOREGROUND")
    assert rows(sql("SELECT count(*) FROM pk2")) == [(0,)]


def test_skip_duplicate_key_errors_skips_rows_whose_key_is_there(sql, broker, topic):
    """SKIP DUPLICATE KEY ERRORS: into a table with a primary key, a row whose key the
    table (or the batch before it) holds is skipped; into one without, every row loads."""
    broker.produce(
        topic, ['{"k": 1, "v": "a"}', '{"k": 2, "v": "b"}', '{"k": 1, "v": "c"}'], partitions=1
    )
    sql("CREATE TABLE keyed (k INT, v TEXT, PRIMARY KEY (k))")
    sql("INSERT INTO keyed VALUES (2, 'old')")
    sql("CREATE TABLE plain (k INT, v TEXT)")
    for name, table in (("dk", "keyed"), ("dp", "plain")):
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f"SKIP DUPLICATE KEY ERRORS INTO TABLE {table} FORMAT JSON"
        )
        sql(f"START PIPELINE {name} FOREGROUND")
    assert rows(sql("SELECT k, v FROM keyed ORDER BY k")) == [(1, "a"), (2, "old")]
    assert rows(sql("SELECT k, v FROM plain ORDER BY k, v")) == [(1, "a"), (1, "c"), (2, "b")]


def test_with_transform_memsql_json_runs_jq_on_each_record(sql, broker, topic):
    """``WITH TRANSFORM ('memsql://json', '', '-r "[…] | @tsv"')``, as SingleStore's flight
    demos write it: jq turns each JSON message into a tab-separated line that the CSV
    clauses then read; a message jq fails on is a parser error named by its offset;
    SHOW CREATE PIPELINE gives the clause back; a program to download is refused."""
    broker.produce(
        topic,
        [
            '{"icao24": "a1", "callsign": "KLM1", "velocity": 230.5, "on_ground": false}',
            "not json",
            '{"icao24": "b2", "callsign": null, "velocity": 0, "on_ground": true}',
        ],
        partitions=1,
    )
    sql("CREATE TABLE flights (icao TEXT, callsign TEXT, velocity DOUBLE, on_ground BOOL)")
    sql(
        f"CREATE PIPELINE fp AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
        "WITH TRANSFORM ('memsql://json', '', "
        "'-r \"[.icao24, .callsign, .velocity, .on_ground] | @tsv\"') "
        "SKIP PARSER ERRORS INTO TABLE flights FIELDS TERMINATED BY '\\t' "
        "(icao, callsign, velocity, on_ground)"
    )
    sql("START PIPELINE fp FOREGROUND")
    assert rows(sql("SELECT icao, callsign, velocity, on_ground FROM flights ORDER BY icao")) == [
        ("a1", "KLM1", 230.5, False),
        ("b2", "", 0.0, True),
    ]
    (error,) = rows(
        sql(
            "SELECT ERROR_MESSAGE, BATCH_OFFSET, LOAD_DATA_LINE FROM "
            "information_schema.PIPELINES_ERRORS WHERE PIPELINE_NAME = 'fp'"
        )
    )
    assert error[0].startswith("jq: parse error") and error[1:] == ("1", "not json")
    shown = sql("SHOW CREATE PIPELINE fp").rows[0][1]
    assert "WITH TRANSFORM ('memsql://json', '', '-r \"[.icao24" in shown
    with pytest.raises(Exception, match="does not download or run programs"):
        sql(
            f"CREATE PIPELINE tw AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' WITH TRANSFORM "
            "('http://download.memsql.com/pipelines-twitter-demo/transform.tar.gz', "
            "'transform.py', '') INTO TABLE flights"
        )


def test_on_duplicate_key_update_applies_rows_one_by_one(sql, broker, topic):
    """``ON DUPLICATE KEY UPDATE`` as MySQL applies it: a new key's first row is inserted
    as it is, and every later row of the key — in the same batch or a later one — updates
    the stored row: bare names read its columns, ``VALUES(col)`` the new row's; columns
    not assigned keep their values. Into a table without a primary key every row loads."""
    first = ['{"icao": "a", "cs": "A1", "alt": 10}', '{"icao": "a", "cs": "A2", "alt": 20}']
    first += ['{"icao": "b", "cs": "B1", "alt": 5}', '{"icao": "a", "cs": "A3", "alt": 30}']
    broker.produce(topic, first, partitions=1)
    sql(
        "CREATE TABLE flightupdates (icao TEXT, callsign TEXT, alt INT, max_alt INT, "
        "count INT DEFAULT 1, PRIMARY KEY (icao))"
    )
    sql("CREATE TABLE seen (icao TEXT, callsign TEXT, count INT)")
    mapping = "(icao <- icao, callsign <- cs, alt <- alt, @alt <- alt)"
    sql(
        f"CREATE PIPELINE fu AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' SKIP ALL ERRORS "
        f"INTO TABLE flightupdates FORMAT JSON {mapping} SET max_alt = @alt, count = 1 "
        "ON DUPLICATE KEY UPDATE count = count + 1, callsign = VALUES(flightupdates.callsign), "
        "max_alt = GREATEST(max_alt, VALUES(max_alt))"
    )
    sql("START PIPELINE fu FOREGROUND")
    assert rows(
        sql("SELECT icao, callsign, alt, max_alt, count FROM flightupdates ORDER BY icao")
    ) == [
        ("a", "A3", 10, 30, 3),  # alt is not assigned: the first row's stays
        ("b", "B1", 5, 5, 1),
    ]
    broker.produce(
        topic, ['{"icao": "b", "cs": "B2", "alt": 1}', '{"icao": "c", "cs": "C1", "alt": 7}']
    )
    sql("START PIPELINE fu FOREGROUND")
    assert rows(sql("SELECT icao, callsign, max_alt, count FROM flightupdates ORDER BY icao")) == [
        ("a", "A3", 30, 3),
        ("b", "B2", 5, 2),
        ("c", "C1", 7, 1),
    ]
    shown = sql("SHOW CREATE PIPELINE fu").rows[0][1]
    assert shown.endswith(
        "ON DUPLICATE KEY UPDATE count = count + 1, callsign = VALUES(flightupdates.callsign), "
        "max_alt = GREATEST(max_alt, VALUES(max_alt))"
    )
    sql(
        f"CREATE PIPELINE fs AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE seen "
        "FORMAT JSON (icao <- icao, callsign <- cs) SET count = 1 "
        "ON DUPLICATE KEY UPDATE count = count + 1"
    )
    sql("START PIPELINE fs FOREGROUND")
    assert rows(sql("SELECT count(*), sum(count) FROM seen")) == [(6, 6)]
    with pytest.raises(Exception, match="'nope' in 'nope \\+ 1' is no column"):
        sql(
            f"CREATE PIPELINE bad AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE "
            "flightupdates FORMAT JSON (icao <- icao) ON DUPLICATE KEY UPDATE count = nope + 1"
        )
    with pytest.raises(Exception, match="reads 'count', which an earlier assignment changes"):
        sql(
            f"CREATE PIPELINE bad AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE "
            "flightupdates FORMAT JSON (icao <- icao) "
            "ON DUPLICATE KEY UPDATE count = count + 1, max_alt = count"
        )
    with pytest.raises(Exception, match="reflect"):  # the query sandbox admits it first
        sql(
            f"CREATE PIPELINE bad AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE "
            "flightupdates FORMAT JSON (icao <- icao) ON DUPLICATE KEY UPDATE "
            "callsign = reflect('java.lang.System', 'getProperty', 'user.home')"
        )
    with pytest.raises(Exception, match="assigns 'icao', a primary-key column"):
        sql(
            f"CREATE PIPELINE bad AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' INTO TABLE "
            "flightupdates FORMAT JSON (icao <- icao) ON DUPLICATE KEY UPDATE icao = 'x'"
        )


def test_lines_terminated_by_text_before_the_newline(sql, tmp_path):
    """TPC-H's files end each line with the field delimiter: ``LINES TERMINATED BY
    '|\\n'`` cuts it off (else the last field would be one too many); a line without it
    is an error in the errors view, never joined to the next. ``'\\r\\n'`` reads Windows
    lines."""
    (tmp_path / "l.tbl").write_text("1|ann|\n2|bo|\n3|cy\n")
    sql("CREATE TABLE l (id INT, name TEXT)")
    sql(
        f"CREATE PIPELINE lp AS LOAD DATA FS '{tmp_path}/*.tbl' SKIP PARSER ERRORS "
        "INTO TABLE l FIELDS TERMINATED BY '|' LINES TERMINATED BY '|\\n'"
    )
    sql("START PIPELINE lp FOREGROUND")
    assert rows(sql("SELECT id, name FROM l ORDER BY id")) == [(1, "ann"), (2, "bo")]
    (error,) = rows(sql("SELECT ERROR_MESSAGE FROM information_schema.PIPELINES_ERRORS"))
    assert "does not end with LINES TERMINATED BY '|\\n'" in error[0]
    assert "LINES TERMINATED BY '|\\n'" in sql("SHOW CREATE PIPELINE lp").rows[0][1]
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "w.csv").write_bytes(b"1,ann\r\n2,bo\r\n")
    sql("CREATE TABLE w (id INT, name TEXT)")
    sql(
        f"CREATE PIPELINE wp AS LOAD DATA FS '{tmp_path}/w/*.csv' INTO TABLE w "
        "FIELDS TERMINATED BY ',' LINES TERMINATED BY '\\r\\n'"
    )
    sql("START PIPELINE wp FOREGROUND")
    assert rows(sql("SELECT id, name FROM w ORDER BY id")) == [(1, "ann"), (2, "bo")]
    # the default, '\n': as in SingleStore (and MySQL), the carriage return is the last
    # field's text, and a number before it is read as the number
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "v.csv").write_bytes(b"ann,1\r\nbo,2\r\n")
    sql("CREATE TABLE wn (id INT, name TEXT); CREATE TABLE nw (name TEXT, id INT)")
    for table, files in (("wn", "w"), ("nw", "v")):
        sql(
            f"CREATE PIPELINE {table}p AS LOAD DATA FS '{tmp_path}/{files}/*.csv' "
            f"INTO TABLE {table} FIELDS TERMINATED BY ','"
        )
        sql(f"START PIPELINE {table}p FOREGROUND")
    assert rows(sql("SELECT id, name FROM wn ORDER BY id")) == [(1, "ann\r"), (2, "bo\r")]
    assert rows(sql("SELECT id, name FROM nw ORDER BY id")) == [(1, "ann"), (2, "bo")]
    # any terminator, newlines being data; LINES STARTING BY skips up to its text, and a
    # line without it is no record (LOAD DATA's documented reading)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "s.csv").write_bytes(b"x>1,a;skip me;junk>2,b\nc;>3,d;")
    sql("CREATE TABLE s (id INT, name TEXT)")
    sql(
        f"CREATE PIPELINE sp AS LOAD DATA FS '{tmp_path}/s/*.csv' INTO TABLE s "
        "FIELDS TERMINATED BY ',' LINES STARTING BY '>' TERMINATED BY ';'"
    )
    sql("START PIPELINE sp FOREGROUND")
    assert rows(sql("SELECT id, name FROM s ORDER BY id")) == [(1, "a"), (2, "b\nc"), (3, "d")]
    assert "LINES STARTING BY '>' TERMINATED BY ';'" in sql("SHOW CREATE PIPELINE sp").rows[0][1]
    with pytest.raises(Exception, match="LINES STARTING BY cuts objects into records"):
        sql(
            "CREATE PIPELINE x AS LOAD DATA KAFKA '127.0.0.1:9/t' INTO TABLE w "
            "LINES STARTING BY '>'"
        )


def test_skip_constraint_errors_skips_rows_the_table_refuses_and_parser_errors_do_not(
    sql, tmp_path
):
    """SingleStore's kinds of error are apart: ``SKIP CONSTRAINT ERRORS`` skips a row
    that leaves a NOT NULL column empty (to the errors view) but a line with the wrong
    number of fields still fails the batch; ``SKIP PARSER ERRORS`` the other way round;
    ``SKIP ALL ERRORS`` both."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.csv").write_text("1,ann\n2,\\N\n3,cy\n")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.csv").write_text("1,ann\n2\n")
    sql("CREATE TABLE k (id INT, name TEXT NOT NULL)")
    for name, skip, folder, loaded, fails in (
        ("c1", "CONSTRAINT", "c", [(1, "ann"), (3, "cy")], None),
        ("c2", "PARSER", "c", None, "'name' is NOT NULL"),
        ("p1", "CONSTRAINT", "p", None, "expected 2 fields, found 1"),
        ("p2", "ALL", "p", [(1, "ann")], None),
    ):
        sql(
            f"CREATE PIPELINE {name} AS LOAD DATA FS '{tmp_path}/{folder}/*.csv' "
            f"SKIP {skip} ERRORS INTO TABLE k FIELDS TERMINATED BY ','"
        )
        assert f"SKIP {skip} ERRORS" in sql(f"SHOW CREATE PIPELINE {name}").rows[0][1]
        if fails:
            with pytest.raises(Exception, match=fails):
                sql(f"START PIPELINE {name} FOREGROUND")
        else:
            sql(f"START PIPELINE {name} FOREGROUND")
        sql(f"DROP PIPELINE {name}")
        if loaded:
            assert rows(sql("SELECT id, name FROM k ORDER BY id")) == loaded
            sql("DROP TABLE k; CREATE TABLE k (id INT, name TEXT NOT NULL)")


def test_a_json_path_a_record_lacks_takes_its_default_or_is_a_bad_record(sql, tmp_path):
    """SingleStore's rule for ``col <- path``: a record without the path gets the
    mapping's DEFAULT, and without a DEFAULT it is an error (SKIP PARSER ERRORS lists it
    in PIPELINES_ERRORS); a JSON null is there, and loads NULL. ``DEFAULT NULL`` takes
    records without the path as NULL."""
    (tmp_path / "a.json").write_text(
        '{"id": 1, "ref": "x", "n": 5}\n'
        '{"id": 2, "n": null}\n'  # no ref: its DEFAULT; n is there, null
        '{"id": 3, "ref": null}\n'  # no n: NULL by DEFAULT NULL
        '{"ref": "y", "n": 1}\n'  # no id and no DEFAULT: a bad record
    )
    sql("CREATE TABLE j (id INT, ref TEXT, n INT)")
    mapping = "(id <- id, ref <- ref DEFAULT 'direct', n <- n DEFAULT NULL)"
    sql(
        f"CREATE PIPELINE strict AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE j FORMAT JSON {mapping}"
    )
    with pytest.raises(Exception, match="the record has no id"):
        sql("START PIPELINE strict FOREGROUND")
    assert rows(sql("SELECT count(*) FROM j")) == [(0,)]
    sql(
        f"CREATE PIPELINE lenient AS LOAD DATA FS '{tmp_path}/*.json' SKIP PARSER ERRORS "
        f"INTO TABLE j FORMAT JSON {mapping}"
    )
    sql("START PIPELINE lenient FOREGROUND")
    assert rows(sql("SELECT id, ref, n FROM j ORDER BY id")) == [
        (1, "x", 5),
        (2, "direct", None),
        (3, None, None),
    ]
    (error,) = rows(
        sql(
            "SELECT ERROR_MESSAGE FROM information_schema.PIPELINES_ERRORS "
            "WHERE PIPELINE_NAME = 'lenient'"
        )
    )
    assert "the record has no id" in error[0]
    shown = sql("SHOW CREATE PIPELINE lenient").rows[0][1]
    assert "(id <- id, ref <- ref DEFAULT 'direct', n <- n DEFAULT NULL)" in shown


def test_json_values_reach_columns_as_text_first(sql, tmp_path):
    """SingleStore converts each extracted JSON value to text before it is assigned or a
    SET sees it ("Extracting and Converting JSON Values"): true/false are "1"/"0", a
    number is its text as written, an object or array its JSON text; the text then
    converts to the column's type, so ``true`` loads 1 into an INT column."""
    (tmp_path / "a.json").write_text(
        '{"id": 1, "ok": true, "price": 1.50, "n": false, "tags": ["a", 2.0], "v": true}\n'
        '{"id": 2, "ok": false, "price": 10, "n": true, "tags": {"k": null}, "v": 7}\n'
    )
    sql("CREATE TABLE jv (id INT, ok TEXT, price TEXT, n INT, tags JSON, label TEXT)")
    sql(
        f"CREATE PIPELINE jvp AS LOAD DATA FS '{tmp_path}/*.json' INTO TABLE jv FORMAT JSON "
        "(id <- id, ok <- ok, price <- price, n <- n, tags <- tags, @v <- v) "
        "SET label = concat('v', @v)"
    )
    sql("START PIPELINE jvp FOREGROUND")
    assert rows(sql("SELECT id, ok, price, n, tags, label FROM jv ORDER BY id")) == [
        (1, "1", "1.50", 0, '["a",2.0]', "v1"),
        (2, "0", "10", 1, '{"k":null}', "v7"),
    ]


def test_a_column_default_fills_what_a_row_does_not_give(sql, tmp_path):
    """A column's DEFAULT is what a row that gives the column no value holds: a pipeline
    whose column list or mapping leaves it out (with or without SET), an INSERT that does
    not name it; CURRENT_TIMESTAMP / NOW() is the time of the load. A NULL the record
    gives is a value (NULL), not a missing one. SHOW CREATE TABLE and DESCRIBE show it."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.tsv").write_text("1\tx\n2\t\\N\n")
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "a.json").write_text('{"id": 3, "s": "y"}\n')
    sql(
        "CREATE TABLE d (id INT, s TEXT, status VARCHAR(10) NOT NULL DEFAULT 'new', "
        "n INT DEFAULT 7, created DATETIME NOT NULL DEFAULT NOW(), note TEXT)"
    )
    sql(f"CREATE PIPELINE dc AS LOAD DATA FS '{tmp_path}/c/*.tsv' INTO TABLE d (id, s)")
    sql(
        f"CREATE PIPELINE dj AS LOAD DATA FS '{tmp_path}/j/*.json' INTO TABLE d FORMAT JSON "
        "(id <- id, s <- s) SET note = upper(s)"
    )
    sql("START PIPELINE dc FOREGROUND")
    sql("START PIPELINE dj FOREGROUND")
    sql("INSERT INTO d (id, n) VALUES (4, NULL)")
    got = rows(sql("SELECT id, s, status, n, note, created IS NOT NULL FROM d ORDER BY id"))
    assert got == [
        (1, "x", "new", 7, None, True),
        (2, None, "new", 7, None, True),
        (3, "y", "new", 7, "Y", True),
        (4, None, "new", None, None, True),  # n given as NULL: NULL
    ]
    shown = sql("SHOW CREATE TABLE d").rows[0][1]
    assert "`status` VARCHAR(10) NOT NULL DEFAULT 'new'" in shown
    assert "`created` DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP" in shown
    described = {r[0]: r[4] for r in sql("DESCRIBE d").rows}
    assert (described["n"], described["note"]) == ("7", None)
    with pytest.raises(Exception, match="Invalid default value for 'x'"):
        sql("CREATE TABLE bad (x INT DEFAULT 'abc')")


def test_auto_increment_gives_each_row_without_a_value_a_new_one(sql, tmp_path):
    """A row that gives an AUTO_INCREMENT column no value (the load leaves it out, or
    gives NULL or 0) gets a value no row of the table had: pipelines (with or without
    SET, plain or REPLACE), INSERT, LOAD DATA. A value a row gives itself is kept and
    moves the counter past it. Values are unique, not consecutive."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.tsv").write_text("a\nb\nc\n")
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "a.json").write_text(
        '{"id": 100, "s": "given"}\n{"id": null, "s": "null"}\n{"id": 0, "s": "zero"}\n'
    )
    sql("CREATE TABLE ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, s TEXT, n INT DEFAULT 5)")
    assert "`id` BIGINT NOT NULL AUTO_INCREMENT" in sql("SHOW CREATE TABLE ai").rows[0][1]
    sql(f"CREATE PIPELINE aic AS LOAD DATA FS '{tmp_path}/c/*.tsv' INTO TABLE ai (s)")
    sql("START PIPELINE aic FOREGROUND")
    first = rows(sql("SELECT id, s, n FROM ai ORDER BY id"))
    assert [(s, n) for _, s, n in first] == [("a", 5), ("b", 5), ("c", 5)]  # file order
    assert [i for i, _, _ in first] == sorted({i for i, _, _ in first}) and first[0][0] >= 1
    sql(
        f"CREATE PIPELINE aij AS LOAD DATA FS '{tmp_path}/j/*.json' INTO TABLE ai FORMAT JSON "
        "(id <- id, s <- s) SET s = upper(s)"
    )
    sql("START PIPELINE aij FOREGROUND")
    sql("INSERT INTO ai (s) VALUES ('ins1'), ('ins2')")
    got = dict((s, i) for i, s, _ in rows(sql("SELECT id, s, n FROM ai")))
    assert got["GIVEN"] == 100
    assert len(set(got.values())) == len(got) == 8  # unique
    assert got["NULL"] > 0 and got["ZERO"] > 0
    assert min(got["ins1"], got["ins2"]) > 100  # the given 100 moved the counter past it
    (tmp_path / "more.tsv").write_text("x\n")
    sql(f"LOAD DATA INFILE '{tmp_path}/more.tsv' INTO TABLE ai (s)")
    assert rows(sql("SELECT count(DISTINCT id), count(*) FROM ai")) == [(9, 9)]
    # a value given alone moves the counter too; an id column must be an integer
    sql("CREATE TABLE ai2 (id BIGINT AUTO_INCREMENT PRIMARY KEY, s TEXT)")
    sql("INSERT INTO ai2 VALUES (3, 'x')")
    sql("INSERT INTO ai2 (s) VALUES ('a'), ('b'), ('c')")
    assert sorted(i for (i,) in rows(sql("SELECT id FROM ai2")))[0] == 3
    assert rows(sql("SELECT count(DISTINCT id) FROM ai2")) == [(4,)]
    with pytest.raises(Exception, match="Incorrect column specifier for column 'k'"):
        sql("CREATE TABLE bad_ai (k TEXT AUTO_INCREMENT)")


def test_load_data_infile_loads_a_file_once_as_mysql_reads_it(sql, tmp_path):
    """``LOAD DATA INFILE`` (MySQL's and SingleStore's one-off load) with the CSV clauses
    of a pipeline: the file loads once, its skipped records told in the answer; nothing
    of it stays behind (no pipeline); ``LOCAL`` (the client's file) is refused."""
    (tmp_path / "cities.csv").write_text(
        'city,lat,lon,pop\n"Oslo",59.9,10.7,700000\n"Tiny",1,2,0\n"Bad",x\n'
    )
    sql("CREATE TABLE cities (city TEXT, pop BIGINT, kind TEXT)")
    done = sql(
        f"LOAD DATA INFILE '{tmp_path}/cities.csv' SKIP PARSER ERRORS INTO TABLE cities "
        "FIELDS TERMINATED BY ',' ENCLOSED BY '\"' LINES TERMINATED BY '\\n' IGNORE 1 LINES "
        "(city, @, @, @pop) SET pop = IF(@pop = 0, 100, @pop), "
        "kind = IF(@pop > 100000, 'hub', 'point')"
    )
    assert done.message.startswith("Query OK, 2 rows affected; 1 skipped (expected 4 fields")
    assert rows(sql("SELECT city, pop, kind FROM cities ORDER BY city")) == [
        ("Oslo", 700000, "hub"),
        ("Tiny", 100, "point"),
    ]
    assert rows(sql("SHOW PIPELINES")) == []
    # LOAD DATA <source> 'path' (SingleStore's one-off load from a source) loads the same
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "c.csv").write_text("Bergen,0\n")
    done = sql(
        f"LOAD DATA FS '{tmp_path}/more/*.csv' INTO TABLE cities "
        "FIELDS TERMINATED BY ',' (city, pop) SET kind = 'point'"
    )
    assert done.message == "Query OK, 1 row affected"
    assert rows(sql("SELECT pop FROM cities WHERE city = 'Bergen'")) == [(0,)]
    with pytest.raises(Exception, match=r"LOAD DATA LOCAL .* is not supported"):
        sql(f"LOAD DATA LOCAL INFILE '{tmp_path}/cities.csv' INTO TABLE cities")


def test_enum_and_set_columns_store_their_members(sql, tmp_path):
    """An ENUM value is stored as the member it names (case and trailing spaces aside),
    in the member's spelling; one that names none is stored as '' (SingleStore: "an
    invalid value is inserted as an empty string"). A SET keeps the members it names,
    once each, in declared order. The same in the tasks, after SET, and for INSERT; a
    NOT NULL ENUM defaults to its first member; a DEFAULT must be a member."""
    (tmp_path / "a.tsv").write_text(
        "1\tExpress\ta,c\n2\tstandard \tC,A,a,x\n3\tovernight\t\n4\t\\N\t\\N\n"
    )
    sql(
        "CREATE TABLE pk (id INT, method ENUM('standard', 'express'), "
        "tags SET('a','b','c'), kind ENUM('x','y') NOT NULL, up ENUM('Low','High'))"
    )
    shown = sql("SHOW CREATE TABLE pk").rows[0][1]
    assert "`method` ENUM('standard','express')" in shown
    assert "`kind` ENUM('x','y') NOT NULL DEFAULT 'x'" in shown
    sql(f"CREATE PIPELINE ep AS LOAD DATA FS '{tmp_path}/a.tsv' INTO TABLE pk (id, method, tags)")
    sql("START PIPELINE ep FOREGROUND")
    sql(
        f"CREATE PIPELINE es AS LOAD DATA FS '{tmp_path}/a.tsv' INTO TABLE pk "
        "(@id, @m, @t) SET id = @id + 10, method = upper(@m), up = IF(@id > 1, 'HIGH', 'lo')"
    )
    sql("START PIPELINE es FOREGROUND")
    sql("INSERT INTO pk (id, method, tags) VALUES (20, 'EXPRESS', 'b,b,zz')")
    sql("INSERT INTO pk (id, method) VALUES (21, 1), (22, 3)")  # an index, as MySQL reads it
    got = rows(sql("SELECT id, method, tags, kind, up FROM pk ORDER BY id"))
    assert got == [
        (1, "express", "a,c", "x", None),
        (2, "standard", "a,c", "x", None),
        (3, "", "", "x", None),  # no such member: ''
        (4, None, None, "x", None),
        (11, "express", None, "x", ""),
        (12, "standard", None, "x", "High"),
        (13, "", None, "x", "High"),
        (14, None, None, "x", "High"),
        (20, "express", "b", "x", None),
        (21, "standard", None, "x", None),
        (22, "", None, "x", None),
    ]
    with pytest.raises(Exception, match="Invalid default value for 'e'"):
        sql("CREATE TABLE bad (e ENUM('a') DEFAULT 'b')")


def test_geography_columns_hold_wkt_as_singlestore_reads_it(sql, tmp_path):
    """GEOGRAPHYPOINT stores ``POINT(lon lat)`` with 8 decimals (a longitude past ±180
    wrapped), from WKT or ``GEOGRAPHY_POINT(lon, lat)`` in SET; GEOGRAPHY holds a POINT,
    LINESTRING or POLYGON. Text that is not such WKT, or a latitude past ±90, is a
    constraint error: PIPELINES_ERRORS with SKIP CONSTRAINT ERRORS, else the batch
    fails; an INSERT of one fails."""
    (tmp_path / "a.tsv").write_text(
        "1\tPOINT(-73.9499 40.6999)\tPOLYGON((0 0, 0 10, 10 10, 10 0, 0 0))\t-73.5\t40.25\n"
        "2\tpoint (190 10)\tLINESTRING(0 0, 1 1)\t190\t-10\n"
        "3\tPOINT(1 95)\tPOINT(1 2)\t1\t2\n"
        "4\tnot wkt\tMULTIPOINT(1 1, 2 2)\t1\t2\n"
        "5\t\\N\t\\N\t\\N\t\\N\n"
    )
    sql("CREATE TABLE geo (id INT, pos GEOGRAPHYPOINT, area GEOGRAPHY, at GEOGRAPHYPOINT)")
    assert "`pos` GEOGRAPHYPOINT" in sql("SHOW CREATE TABLE geo").rows[0][1]
    sql(
        f"CREATE PIPELINE gp AS LOAD DATA FS '{tmp_path}/a.tsv' SKIP CONSTRAINT ERRORS "
        "INTO TABLE geo (id, pos, area, @lon, @lat) SET at = GEOGRAPHY_POINT(@lon, @lat)"
    )
    sql("START PIPELINE gp FOREGROUND")
    got = rows(sql("SELECT id, pos, area, at FROM geo ORDER BY id"))
    polygon = "POLYGON((0 0, 0 10, 10 10, 10 0, 0 0))"
    assert got == [
        (1, "POINT(-73.94990000 40.69990000)", polygon, "POINT(-73.50000000 40.25000000)"),
        (
            2,
            "POINT(-170.00000000 10.00000000)",
            "LINESTRING(0 0, 1 1)",
            "POINT(-170.00000000 -10.00000000)",
        ),
        (5, None, None, None),
    ]
    errors = rows(sql("SELECT ERROR_MESSAGE FROM information_schema.PIPELINES_ERRORS"))
    assert len(errors) == 2
    assert any("cannot hold 'POINT(1 95)' as GEOGRAPHYPOINT" in e[0] for e in errors)
    assert any("cannot hold 'not wkt' as GEOGRAPHYPOINT" in e[0] for e in errors)
    with pytest.raises(Exception, match="cannot hold 'MULTIPOINT"):
        sql("INSERT INTO geo (id, area) VALUES (9, 'MULTIPOINT(1 1, 2 2)')")


def test_an_insert_of_a_key_the_table_holds_fails_whole(sql):
    """INSERT into a table with a PRIMARY KEY: a key the table holds, or two rows of the
    statement share, is MySQL's "Duplicate entry", and nothing of the statement is
    written; INSERT IGNORE skips such rows (the first of a key kept); INSERT … ON
    DUPLICATE KEY UPDATE on its own is named as not supported yet."""
    sql("CREATE TABLE ik (k INT PRIMARY KEY, v TEXT)")
    sql("INSERT INTO ik VALUES (1, 'a'), (2, 'b')")
    # the stored rows of a batch's keys, read from an empty table with a timestamp column
    sql("CREATE TABLE ikt (k INT PRIMARY KEY, ts DATETIME)")
    sql("INSERT INTO ikt VALUES (1, '2024-01-02 03:04:05')")
    assert rows(sql("SELECT k FROM ikt")) == [(1,)]
    with pytest.raises(Exception, match="Duplicate entry '2' for key 'PRIMARY'"):
        sql("INSERT INTO ik VALUES (3, 'c'), (2, 'again')")
    with pytest.raises(Exception, match="Duplicate entry '4'"):
        sql("INSERT INTO ik VALUES (4, 'd'), (4, 'e')")
    assert rows(sql("SELECT k, v FROM ik ORDER BY k")) == [(1, "a"), (2, "b")]
    sql("INSERT IGNORE INTO ik VALUES (3, 'c'), (2, 'again'), (3, 'twice')")  # MySQL's skip
    assert rows(sql("SELECT k, v FROM ik ORDER BY k")) == [(1, "a"), (2, "b"), (3, "c")]
    with pytest.raises(Exception, match=r"ON DUPLICATE KEY UPDATE .* not supported yet"):
        sql("INSERT INTO ik SELECT 1, 'x' ON DUPLICATE KEY UPDATE v = VALUES(v)")


def test_a_table_s_one_unique_key_is_its_key(sql, tmp_path):
    """SingleStore's columnstore tables declare ``UNIQUE KEY pk (…) USING HASH`` and no
    PRIMARY KEY: a row repeating it is a duplicate key (INSERT fails, a plain pipeline's
    batch fails, REPLACE replaces by it). A UNIQUE KEY beside another key, or on a column
    that may be NULL (MySQL lets NULLs repeat in it), is refused by name, not loaded
    unenforced."""
    sql("CREATE TABLE uk (k INT NOT NULL, v TEXT, UNIQUE KEY pk (k) USING HASH, SHARD KEY (k))")
    sql("INSERT INTO uk VALUES (1, 'a'), (3, 'n')")
    with pytest.raises(Exception, match="Duplicate entry '1'"):
        sql("INSERT INTO uk VALUES (1, 'again')")
    (tmp_path / "a.csv").write_text("1,b\n2,c\n")
    sql(
        f"CREATE PIPELINE ukp AS LOAD DATA FS '{tmp_path}/*.csv' REPLACE INTO TABLE uk "
        "FIELDS TERMINATED BY ','"
    )
    sql("START PIPELINE ukp FOREGROUND")
    assert rows(sql("SELECT k, v FROM uk ORDER BY k, v")) == [(1, "b"), (2, "c"), (3, "n")]
    with pytest.raises(Exception, match="which may be NULL, is not supported yet"):
        sql("CREATE TABLE nk (k INT, UNIQUE KEY (k))")
    with pytest.raises(Exception, match="UNIQUE KEY `u` \\(v\\) beside the PRIMARY KEY"):
        sql("CREATE TABLE two (k INT PRIMARY KEY, v TEXT, UNIQUE KEY u (v))")


def test_on_update_current_timestamp_marks_rows_an_update_changes(sql, tmp_path):
    """``ON UPDATE CURRENT_TIMESTAMP`` (MySQL's rule): an ON DUPLICATE KEY UPDATE that
    changes the stored row sets the column to the time of the update; one that changes
    nothing leaves it. ``SERIES TIMESTAMP`` is kept in SHOW CREATE TABLE, with no effect."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "1.tsv").write_text("k1\t1\nk2\t1\n")
    sql(
        "CREATE TABLE tu (k TEXT PRIMARY KEY, v INT, "
        "ts DATETIME(6) NOT NULL DEFAULT NOW(6) ON UPDATE NOW(6) SERIES TIMESTAMP)"
    )
    shown = sql("SHOW CREATE TABLE tu").rows[0][1]
    assert "DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP SERIES TIMESTAMP" in shown
    sql(
        f"CREATE PIPELINE tup AS LOAD DATA FS '{tmp_path}/a/*.tsv' INTO TABLE tu (k, v) "
        "ON DUPLICATE KEY UPDATE v = VALUES(v)"
    )
    sql("START PIPELINE tup FOREGROUND")
    before = dict(rows(sql("SELECT k, ts FROM tu")))
    (tmp_path / "a" / "2.tsv").write_text("k1\t1\nk2\t2\n")  # k1 unchanged, k2 changed
    sql("START PIPELINE tup FOREGROUND")
    after = dict(rows(sql("SELECT k, ts FROM tu")))
    assert after["k1"] == before["k1"]
    assert after["k2"] > before["k2"]
    assert rows(sql("SELECT k, v FROM tu ORDER BY k")) == [("k1", 1), ("k2", 2)]


def test_vector_columns_take_json_arrays_of_their_size(sql, tmp_path):
    """``VECTOR(n[, type])`` holds n elements (an ARRAY of the element type here), loaded
    from a JSON array's text ('[1,2,3]', as SingleStore takes it) or a JSON array; a value
    of another size is a constraint error (PIPELINES_ERRORS with SKIP CONSTRAINT ERRORS)."""
    (tmp_path / "v.tsv").write_text("1\t[1,2,3]\t[4,5]\n2\t[0.5, 1.5, 2]\t[7,8]\n3\t[1,2]\t[1,1]\n")
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "v.json").write_text('{"id": 4, "v": [9, 9, 9]}\n')
    sql("CREATE TABLE vec (id INT, v VECTOR(3), w VECTOR(2, I16))")
    assert "`v` VECTOR(3, F32)" in sql("SHOW CREATE TABLE vec").rows[0][1]
    sql(
        f"CREATE PIPELINE vp AS LOAD DATA FS '{tmp_path}/v.tsv' SKIP CONSTRAINT ERRORS "
        "INTO TABLE vec (id, v, w)"
    )
    sql("START PIPELINE vp FOREGROUND")
    sql(
        f"CREATE PIPELINE vj AS LOAD DATA FS '{tmp_path}/j/*.json' INTO TABLE vec FORMAT JSON "
        "(id <- id, v <- v)"
    )
    sql("START PIPELINE vj FOREGROUND")
    got = rows(sql("SELECT id, v, w FROM vec ORDER BY id"))
    assert [(i, list(v), w and list(w)) for i, v, w in got] == [
        (1, [1.0, 2.0, 3.0], [4, 5]),
        (2, [0.5, 1.5, 2.0], [7, 8]),
        (4, [9.0, 9.0, 9.0], None),
    ]
    (error,) = rows(sql("SELECT ERROR_MESSAGE FROM information_schema.PIPELINES_ERRORS"))
    assert "VECTOR(3)" in error[0] and "2 elements" in error[0]
    sql("INSERT INTO vec VALUES (5, '[1, 2, 3]', '[7, 8]')")  # the text, as SingleStore takes it
    assert [list(v) for (v,) in rows(sql("SELECT w FROM vec WHERE id = 5"))] == [[7, 8]]
    with pytest.raises(Exception, match="VECTOR\\(3\\)"):
        sql("INSERT INTO vec VALUES (6, '[1, 2]', NULL)")


def test_mysql_date_arithmetic_in_set(sql, tmp_path):
    """``DATE_ADD(d, INTERVAL (expr) UNIT)`` / ``DATE_SUB`` as MySQL computes them (Spark's
    functions of those names add days, and its INTERVAL takes only literals)."""
    (tmp_path / "a.tsv").write_text("1500\t2024-03-01\n")
    sql("CREATE TABLE da (ts DATETIME(6), d DATE, later DATETIME, q TEXT)")
    sql(
        f"CREATE PIPELINE dap AS LOAD DATA FS '{tmp_path}/a.tsv' INTO TABLE da (@ms, @day) "
        "SET ts = DATE_ADD(FROM_UNIXTIME(0), INTERVAL (@ms / 1000) SECOND), "
        "d = DATE_SUB(@day, INTERVAL 1 DAY), later = DATE_ADD(@day, INTERVAL 2 HOUR), "
        "q = DATE_ADD(CAST(@day AS DATE), INTERVAL (@ms / 1000) DAY)"
    )
    sql("START PIPELINE dap FOREGROUND")
    ((ts, d, later, q),) = rows(sql("SELECT ts, d, later, q FROM da"))
    assert (str(ts), str(d), str(later), q) == (
        "1970-01-01 00:00:01.500000",
        "2024-02-29",
        "2024-03-01 02:00:00",
        "2024-03-03",  # 1.5 days: two whole days, and a DATE stays a DATE
    )
