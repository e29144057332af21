"""A pipeline definition as a version-1 catalog stored it: the flat options of the old
PipelineSpec, credentials redacted. Shared by the migration and lowering tests."""

V1_KAFKA = {
    "name": "p",
    "source": "kafka",
    "location": "127.0.0.1:9092/t",
    "table": "t",
    "format": "json",
    "config": {},
    "credentials": {"sasl.password": "<redacted>"},
    "mapping": [{"column": "a", "path": ["x"]}],
    "csv": {"delimiter": ",", "quote": '"', "escape": None, "header": False},
    "batch_interval_ms": 75,
    "max_partitions_per_batch": None,
    "max_offsets_per_batch_partition": 1000000,
    "max_retries": 4,
    "skip_parser_errors": False,
    "offsets": "earliest",
    "on_offset_out_of_range": "fail",
    "provenance": False,
    "fetch_timeout_ms": 200,
    "on_duplicate_key": None,
    "assignments": [],
    "where": None,
    "skip_lines": 0,
}
