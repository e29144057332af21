"""The Pinot compatibility corpus (``tests/corpus/pinot``): REALTIME (table config, schema)
pairs written by others (Apache Pinot's examples and test resources, its history, public
recipe and application repositories), each with its source in ``index.yaml``. Every pair is
planned as ``sparkpipes AddTable`` without ``-exec`` plans it, and is accepted, or is a gap
listed below with the text its error must contain: what is missing, "not supported". A gap
that starts to pass fails this test until it leaves the list, so the list stays true."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from sparkpipes import Engine
from sparkpipes.errors import ConfigError

CORPUS = pathlib.Path(__file__).parents[3] / "corpus" / "pinot"
ITEMS = {item["id"]: item for item in yaml.safe_load((CORPUS / "index.yaml").read_text())}

NS = "is not supported"
COMPLEX = "complexTypeConfig (flattening nested records into columns, unnesting arrays into rows) "
ROLLUP = "aggregationConfigs (ingestion-time rollup) " + NS
AGGREGATE_METRICS = "aggregateMetrics (rolling up metrics of rows with equal dimensions"
HIGH_LEVEL = "consumer.type highlevel " + NS
METADATA = 'which only "metadata.populate": "true" in the streamConfigs fills'
#: pair → what its error says, by cause
GAPS = {
    # Pinot's high-level consumer (removed from Pinot too)
    "apache-pinot-history/sample-data-kafka-0-9-meetupRsvp-realtime-table-config": HIGH_LEVEL,
    "apache-pinot-history/sample-data-kafka-2-0-meetupRsvp-realtime-table-config": HIGH_LEVEL,
    "apache-pinot-history/sample-data-rsvp-create-table-request": HIGH_LEVEL,
    # aggregateMetrics true (and a LinkedIn-internal consumer factory)
    "apache-pinot/pinot-controller-memory-estimation-table-config": AGGREGATE_METRICS,
    "apache-pinot/pinot-controller-memory-estimation-table-config-for-upsert": AGGREGATE_METRICS,
    "apache-pinot-history/pinot-tools-memory-estimation-table-config": AGGREGATE_METRICS,
    # complexTypeConfig (and the dotted column names it flattens into)
    "apache-pinot/stream-meetupRsvpComplexType-meetupRsvpComplexType-realtime-table-config": (
        COMPLEX + NS
    ),
    "apache-pinot-history/examples-stream-meetupRsvp-complexTypeHandling-meetupRsvp-realtime-table-config": COMPLEX
    + NS,
    "pinot-recipes/ingest-avro-config-table": COMPLEX + NS,
    # ingestion-time aggregation
    "apache-pinot/stream-dailySales-dailySales-realtime-table-config": ROLLUP,
    "pinpoint/collector-pinot-heatmap-stat-application-realtime-table": ROLLUP,
    "pinpoint/inspector-module-inspector-collector-pinot-inspector-stat-application-realtime-table": ROLLUP,
    # stream types without a connector here
    "pinot-recipes/pulsar-config-table": "streamType 'pulsar' is not supported",
    # decoders
    "pinpoint/exceptiontrace-exceptiontrace-common-pinot-exceptionTrace-realtime-table": (
        "decoder 'org.apache.pinot.plugin.inputformat.clplog.CLPLogMessageDecoder' " + NS
    ),
    "apache-pinot/pinot-tools-src-main-resources-conf-sample-realtime-table-config": (
        "decoder 'org.apache.pinot.plugin.stream.kafka.KafkaAvroMessageDecoder' " + NS
    ),
    # a schema listing Kafka metadata columns, paired with a config that does not fill them
    "apache-pinot-history/examples-stream-meetupRsvp-kafka-0-9-meetupRsvp-realtime-table-config": (
        METADATA
    ),
    "apache-pinot-history/examples-stream-meetupRsvp-kafka-2-0-meetupRsvp-realtime-table-config": (
        METADATA
    ),
    "apache-pinot/docker-images-pinot-examples-docker-table-configs-meetupRsvp-realtime-table-config": METADATA,
    # Groovy, refused on purpose (a script runs arbitrary code)
    "pinot-recipes/groovy-transformation-functions-config-table": "Groovy scripts are not supported",
    # not configs as written: Pinot refuses them too
    "apache-pinot/pinot-connectors-pinot-flink-connector-fixtures-pinotTableConfigLowLevel": (
        "needs stream.kafka.decoder.class.name"
    ),
    "pinpoint/inspector-module-inspector-collector-multi-table-template-REALTIME": (
        "tableName 'inspectorStatAgent${NUM}' must be letters, digits and underscores"
    ),
    "pinpoint/metric-module-metric-multi-table-template-REALTIME": (
        "tableName 'systemMetricDouble${NUM}' must be letters, digits and underscores"
    ),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with Engine(str(tmp_path_factory.mktemp("pinot_corpus"))) as eng:
        yield eng


def _read(item, key):
    return (CORPUS / item[key]).read_text(encoding="utf-8")


def test_the_corpus_holds_what_it_says():
    assert len(ITEMS) >= 99
    for item in ITEMS.values():
        assert {"id", "table", "schema", "table_source", "schema_source"} <= set(item), item["id"]
    assert set(GAPS) <= set(ITEMS)


@pytest.mark.parametrize("item_id", sorted(ITEMS))
def test_each_pair_is_accepted_or_a_known_gap(engine, item_id):
    item = ITEMS[item_id]
    table, schema = _read(item, "table"), _read(item, "schema")
    if item_id not in GAPS:
        out = engine.pinot.plan(table, schema)
        assert out["pipeline"].endswith("_REALTIME")
        assert isinstance(out["unrecognizedProperties"], list)
        return
    with pytest.raises(ConfigError) as e:
        engine.pinot.plan(table, schema)
    assert GAPS[item_id] in str(e.value), str(e.value)
