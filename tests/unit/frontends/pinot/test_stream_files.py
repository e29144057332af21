"""Which keys of a Pinot streamConfigs name a file of the server (what ``POST /tables``
needs FILE READ for), judged on the text the clients get."""

from __future__ import annotations

from sparkpipes.frontends.pinot.stream import local_file_keys

SCHEMA = "stream.kafka.decoder.prop.schema"


def test_a_schema_named_as_a_path_or_a_number_is_a_file_and_inline_json_is_not():
    assert local_file_keys({SCHEMA: "/etc/x.avsc"}) == [SCHEMA]
    assert local_file_keys({SCHEMA: 12345}) == [SCHEMA]  # opens the file '12345' (review R12)
    assert local_file_keys({SCHEMA: '{"type": "record", "name": "r", "fields": []}'}) == []
    assert local_file_keys({"stream.kafka.topic.name": "t", "stream.kafka.consumer.type": 1}) == []
