"""The SingleStore sink's keys of other releases (``memsql.*``, Helios'
``connection.clientEndpoint``): honoured as today's keys, accepted as not applicable with
their values checked, or refused by name — never ignored."""

from __future__ import annotations

import pytest

from sparkpipes.errors import ConfigError
from sparkpipes.frontends.connect import validate
from sparkpipes.frontends.connect.model import load, moved, not_applicable

OLD = {
    "name": "old",
    "connector.class": "com.memsql.kafka.MemSQLSinkConnector",
    "topics": "t",
    "connection.clientEndpoint": "127.0.0.1:3306",
    "connection.database": "db",
    "memsql.loadDataCompression": "LZ4",
    "memsql.loadDataFormat": "Avro",
    "memsql.metadata.allow": "true",
    "memsql.metadata.table": "meta",
}


def test_the_memsql_names_and_the_client_endpoint_are_honoured_as_todays_keys():
    cfg = load(OLD)
    assert (cfg.destination, cfg.host, cfg.port, cfg.database) == ("mysql", "127.0.0.1", 3306, "db")
    assert cfg.metadata_table == "meta"
    assert load({**OLD, "memsql.metadata.allow": "false"}).metadata_table is None
    assert dict(cfg.raw) == OLD  # shown back as given
    why = not_applicable(cfg.raw)
    assert set(why) == {"memsql.loadDataCompression", "memsql.loadDataFormat"}
    assert "LOAD DATA" in why["memsql.loadDataFormat"]
    assert "singlestore.loadDataCompression" in not_applicable(
        load({**OLD, "singlestore.loadDataCompression": "LZ4"}).raw
    )


def test_values_are_checked_and_two_names_of_one_setting_must_agree():
    with pytest.raises(ConfigError, match=r"memsql\.loadDataFormat must be one of CSV, Avro"):
        load({**OLD, "memsql.loadDataFormat": "JSON"})
    with pytest.raises(ConfigError, match=r"memsql\.loadDataCompression must be"):
        load({**OLD, "memsql.loadDataCompression": "zstd"})
    with pytest.raises(ConfigError, match="same setting with different values"):
        load({**OLD, "singlestore.metadata.table": "other"})
    with pytest.raises(ConfigError, match="same setting"):
        load({**OLD, "connection.ddlEndpoint": "127.0.0.2:3306"})
    with pytest.raises(ConfigError, match="holds a password"):
        load({**OLD, "connection.clientEndpoint": "u:pw@127.0.0.1:3306"})


def test_keys_that_change_what_is_loaded_are_refused_by_name_all_at_once():
    answer = validate.validate(
        OLD["connector.class"],
        {
            **OLD,
            "singlestore.filter": "id > 5",
            "singlestore.columnToField.t.c": "a.b",
            "singlestore.recordToTable.mappingField": "kind",
            "singlestore.recordToTable.mapping.x": "tx",
        },
    )
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"]}
    assert answer["error_count"] == 4
    assert "not supported" in errors["singlestore.filter"][0]
    assert "columnToField" in errors["singlestore.columnToField.t.c"][0]
    assert errors["singlestore.recordToTable.mapping.x"]


def test_a_stored_password_follows_the_client_endpoint_as_it_follows_the_ddl_endpoint():
    assert moved(OLD, {**OLD, "memsql.metadata.table": "x"}) == []
    assert moved(OLD, {**OLD, "connection.clientEndpoint": "10.0.0.1"}) == [
        "connection.clientEndpoint"
    ]
