"""``stream.kafka.consumer.type: highlevel``: Pinot's high-level (stream-level) Kafka
consumer, read as the same rows a low-level consumer loads.

What Pinot's high-level consumer loads (``KafkaStreamLevelConsumer`` and
``KafkaStreamLevelStreamConfig`` of ``pinot-kafka-2.0``, deprecated since Pinot 0.12 and
removed in 1.0: apache/pinot@f25f3ed1f242^): a ``KafkaConsumer`` subscribed to the topic
in a consumer group Pinot names per table, bootstrapped from
``stream.kafka.hlc.bootstrap.server``, each record's **value** decoded by the table's
decoder (``_messageDecoder.decode(record.value().get(), destination)``: no key, no headers,
no offset / partition / timestamp metadata), a new group starting where
``stream.kafka.consumer.prop.auto.offset.reset`` says (Kafka's default: the latest), the
group's offsets committed after a segment is flushed. The low-level consumer reads the
same records of the same partitions from the same start; so the rows are the same, read
here partition by partition with the offsets committed with the rows (exactly once: the
high-level consumer could load a record twice, or lose one, across a restart, as its
offsets and segments are not committed together).

So a high-level config is accepted and read as a low-level one, with these differences
kept: ``__key`` is not filled from a record's key and ``metadata.populate`` fills nothing
(both store the columns' default null values, with a note), as that consumer hands the
decoder only the value. Its ``stream.kafka.hlc.*`` keys other than the bootstrap servers
and a ``consumer.prop.group.id`` concern the consumer group and are reported as not
applicable (:mod:`.keys`). The Kafka 0.9 high-level consumer finds the brokers through
ZooKeeper (``stream.kafka.hlc.zk.connect.string``): that is refused by name, with the way
out (give the brokers). Current Apache Pinot refuses every ``highlevel`` table
(``StreamConfig``: "Realtime tables with HLC consumer (consumer.type=highlevel) is no
longer supported in Apache Pinot"); the Kafka 2.0 ones are still read here, as their rows
are the low-level consumer's, while the Kafka 0.9 ones would need the brokers looked up in
ZooKeeper, which nothing here does.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkpipes.errors import ConfigError

_HIGH = ("highlevel", "high_level")
_LOW = ("lowlevel", "low_level", "simple")
#: the key Pinot's Kafka 2.0 high-level consumer takes its brokers from (after stream.kafka.)
BOOTSTRAP = "hlc.bootstrap.server"
ZOOKEEPER = "hlc.zk.connect.string"
NOTE = (
    "{p}consumer.type highlevel: read as lowlevel, partition by partition with the offsets "
    "committed with the rows (the same records; Pinot's high-level consumer hands its "
    "decoder only each record's value, so __key and metadata columns store their default "
    "null values)"
)


def is_high_level(given: Mapping[str, str], p: str, where: str) -> bool:
    """Whether ``{p}consumer.type`` names the high-level consumer (Pinot reads it case
    blind, ``highLevel`` as written by its older examples); an unknown type is an error."""
    ctype = given.get(p + "consumer.type", "lowlevel").lower()
    if ctype not in (*_HIGH, *_LOW):
        raise ConfigError(
            f"{where}: {p}consumer.type must be lowlevel or highlevel, got "
            f"'{given[p + 'consumer.type']}'"
        )
    return ctype in _HIGH


def refuse_high_level(given: Mapping[str, str], p: str, where: str) -> None:
    """For a stream without Pinot's high-level consumer (Kinesis, plugins)."""
    if is_high_level(given, p, where):
        raise ConfigError(
            f"{where}: {p}consumer.type highlevel is not supported for this stream (Pinot's "
            "high-level consumer is Kafka's): use lowlevel"
        )


def brokers(given: Mapping[str, str], p: str, where: str) -> str | None:
    """The brokers the high-level consumer bootstraps from (``{p}hlc.bootstrap.server``,
    else the low-level ``{p}broker.list``). None when neither is given; brokers found
    through ZooKeeper only are refused by name."""
    found = given.get(p + BOOTSTRAP) or given.get(p + "broker.list")
    if found is None and given.get(p + ZOOKEEPER):
        raise ConfigError(
            f"{where}: {p}consumer.type highlevel with the brokers found through ZooKeeper "
            f"({p}{ZOOKEEPER}, Pinot's Kafka 0.9 consumer) is not supported: give the "
            f"brokers in {p}{BOOTSTRAP} or {p}broker.list (host:port). Current Apache Pinot "
            'refuses every high-level consumer too: "Realtime tables with HLC consumer '
            '(consumer.type=highlevel) is no longer supported in Apache Pinot"'
        )
    return found
