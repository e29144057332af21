"""Seed 000 (SingleStore Kafka Connect pipelines) typed into ``sparkpipes sql`` as a user
would, against moto's Kinesis on 127.0.0.1 with 4 shards and 10,000 records: the
statements are the seed's, with the local endpoint added to CONFIG."""

from __future__ import annotations

import json
import os
import subprocess
import sys

N = 10_000
SHARDS = 4


def cli(*args, wh, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "sparkpipes", "--warehouse", str(wh), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SPARKPIPES_SPARK_MASTER": "local[2]"},
    )


def test_seed_example_1_inferred_kinesis_pipeline(tmp_path, s3_server):
    stream = "my-kinesis-stream-e1"
    s3_server.create_stream(stream, SHARDS)
    s3_server.put_records(
        stream,
        [
            (
                f"{i}",
                json.dumps(
                    {
                        "customer_id": f"c{i:05d}",
                        "order_id": f"o{i}",
                        "timestamp": f"2026-11-23T00:00:{i % 60:02d}",
                        "status": "active" if i % 4 else "closed",
                        "fieldName": i,
                    }
                ).encode(),
            )
            for i in range(N)
        ],
    )
    cfg = s3_server.kinesis_config(stream, **{"tasks.max": 4})
    config = (
        '{"connector.class": "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector",'
        f'"aws.access.key.id": "{cfg["aws.access.key.id"]}",'
        f'"aws.secret.key.id": "{cfg["aws.secret.key.id"]}",'
        '"kafka.topic": "kinesis-topic",'
        f'"kinesis.stream": "{stream}",'
        '"kinesis.region": "us-east-1",'
        f'"kinesis.endpoint": "{cfg["kinesis.endpoint"]}",'
        '"tasks.max": 4}'
    )
    script = tmp_path / "seed000.sql"
    # seed 000, Example 1 and its queries, in the seed's order and spelling
    script.write_text(
        f"""
-- Enable the experimental feature
SET GLOBAL experimental_features_config = "kafka_connect_enabled=true";
SHOW VARIABLES LIKE 'experimental_features_config';
-- Create Kinesis pipeline
CREATE INFERRED PIPELINE kinesis_pipeline
AS LOAD DATA KAFKACONNECT 'kafka-connector'
CONFIG '{config}'
CREDENTIALS '{{}}' -- AWS credentials are in CONFIG for Kinesis connector
FORMAT AVRO;
SHOW CREATE TABLE kinesis_pipeline;
-- Start the pipeline
START PIPELINE kinesis_pipeline FOREGROUND;
SELECT PIPELINE_NAME, STATE FROM information_schema.PIPELINES
WHERE PIPELINE_NAME = 'kinesis_pipeline';
SELECT count(*) AS loaded, count(DISTINCT id) AS ids FROM kinesis_pipeline;
-- Extract a specific field
SELECT topic, JSON_EXTRACT_STRING(FROM_BASE64(record::$data), 'fieldName') AS field_value
FROM kinesis_pipeline ORDER BY CAST(field_value AS INT) LIMIT 1;
-- Filter based on JSON content
SELECT count(*) AS active FROM kinesis_pipeline
WHERE JSON_EXTRACT_STRING(FROM_BASE64(record::$data), 'status') = 'active';
-- the seed's queries verbatim (its records hold the fields themselves; a Kinesis
-- record's fields are partitionKey, sequenceNumber, shardId and data)
SELECT topic, JSON_EXTRACT_STRING(record, 'fieldName') AS field_value FROM kinesis_pipeline LIMIT 1;
SELECT * FROM kinesis_pipeline WHERE JSON_EXTRACT_STRING(record, 'status') = 'active';
SELECT topic, JSON_EXTRACT_STRING(record, 'customer_id') AS customer_id,
JSON_EXTRACT_STRING(record, 'order_id') AS order_id,
JSON_EXTRACT_STRING(record, 'timestamp') AS event_time FROM kinesis_pipeline LIMIT 1;
SELECT count(*) AS with_shard FROM kinesis_pipeline
WHERE JSON_EXTRACT_STRING(record, 'shardId') LIKE 'shardId-%';
-- Create a computed column for better performance
ALTER TABLE kinesis_pipeline
ADD COLUMN status AS (JSON_EXTRACT_STRING(FROM_BASE64(record::$data), 'status')) PERSISTED STRING;
CREATE INDEX idx_status ON kinesis_pipeline(status);
SELECT * FROM information_schema.PIPELINES_SOURCE_OFFSETS
WHERE PIPELINE_NAME = 'kinesis_pipeline';
-- Check task distribution
SELECT
TASK_ID,
COUNT(*) as offset_count
FROM information_schema.PIPELINES_SOURCE_OFFSETS
WHERE PIPELINE_NAME = 'kinesis_pipeline'
GROUP BY TASK_ID ORDER BY TASK_ID;
SHOW CREATE PIPELINE kinesis_pipeline;
"""
    )
    p = cli("sql", "-f", str(script), wh=tmp_path / "wh")
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "| experimental_features_config | kafka_connect_enabled=true |" in out
    assert "`topic` TEXT NOT NULL" in out and "SORT KEY `__UNORDERED` ()" in out
    assert f"Query OK, {N} rows loaded" in out
    assert f"| {N:<6} | {N:<5} |" in out  # loaded, ids: every record once
    assert "| kinesis-topic | 0           |" in out
    assert f"| {N * 3 // 4:<6} |" in out
    assert "| kinesis-topic | NULL        |" in out  # verbatim: no such field in the record
    assert f"| with_shard |\n+------------+\n| {N:<10} |" in out
    for task in range(4):
        assert (
            f'| sparkpipes    | kinesis_pipeline | {task}       | {{"shardId":"shardId-00000000000{task}"}}'
            in out
        )
    assert out.count("| 1            |") == 4  # one offset row per task
    assert cfg["aws.secret.key.id"] not in out + p.stderr
    assert "Traceback" not in p.stderr


def test_seed_example_2_kinesis_into_a_procedure(tmp_path, s3_server):
    stream = "my-kinesis-stream-e2"
    s3_server.create_stream(stream, SHARDS)
    s3_server.put_records(
        stream,
        [
            (
                f"{i}",
                json.dumps({"customer_id": f"c{i:05d}", "event_type": "buy"}).encode(),
            )
            for i in range(N)
        ],
    )
    cfg = s3_server.kinesis_config(stream)
    script = tmp_path / "seed000-2.sql"
    # seed 000, Example 2, verbatim but for the stream name and the local endpoint
    script.write_text(
        f"""
-- Enable the experimental feature
SET GLOBAL experimental_features_config = "kafka_connect_enabled=true";
-- Create the target table for parsed records
CREATE TABLE parsed_kinesis_stream (
partitionKey BIGINT,
sequence_number VARCHAR(255),
shardId VARCHAR(255),
data_base64 VARCHAR(255),
parsed_data AS FROM_BASE64(data_base64) PERSISTED VARCHAR(255)
);
-- Create the stored procedure to process incoming records
CREATE OR REPLACE PROCEDURE parse_kinesis_stream(batch QUERY(topic VARCHAR(255), id JSON, record JSON))
AS
BEGIN
INSERT INTO parsed_kinesis_stream (partitionKey,sequence_number,shardId,data_base64)
SELECT
record::$partitionKey,
record::$sequenceNumber,
record::$shardId,
record::$data
FROM batch;
END;
-- Create Kinesis pipeline with INTO PROCEDURE
CREATE PIPELINE kinesis_pipeline_to_proc
AS LOAD DATA KAFKACONNECT 'kafka-connector'
CONFIG '{{"connector.class": "com.singlestore.kafka.connect.kinesis.KinesisSourceConnector",
"aws.access.key.id": "{cfg["aws.access.key.id"]}",
"aws.secret.key.id": "{cfg["aws.secret.key.id"]}",
"kafka.topic": "kinesis-topic",
"kinesis.stream": "{stream}",
"kinesis.region": "us-east-1",
"kinesis.endpoint": "{cfg["kinesis.endpoint"]}",
"tasks.max": 4}}'
CREDENTIALS '{{}}'
BATCH_INTERVAL 2500
INTO PROCEDURE parse_kinesis_stream
FORMAT AVRO (`topic` <- `topic`,`id` <- `id`,`record` <- `record`);
SHOW PROCEDURES;
-- Start the pipeline
START PIPELINE kinesis_pipeline_to_proc FOREGROUND;
-- Query decoded data
SELECT count(*) AS decoded FROM parsed_kinesis_stream;
SELECT
partitionKey,
JSON_EXTRACT_STRING(parsed_data, 'customer_id') AS customer_id,
JSON_EXTRACT_STRING(parsed_data, 'event_type') AS event_type
FROM parsed_kinesis_stream ORDER BY partitionKey LIMIT 2;
-- Decode and extract in a single query
SELECT
JSON_EXTRACT_STRING(FROM_BASE64(data_base64), 'customer_id') AS customer_id
FROM parsed_kinesis_stream
WHERE JSON_EXTRACT_STRING(FROM_BASE64(data_base64), 'customer_id') = 'c00007';
SELECT TASK_ID, COUNT(*) as offset_count FROM information_schema.PIPELINES_SOURCE_OFFSETS
WHERE PIPELINE_NAME = 'kinesis_pipeline_to_proc' GROUP BY TASK_ID ORDER BY TASK_ID;
"""
    )
    p = cli("sql", "-f", str(script), wh=tmp_path / "wh")
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout
    assert "| parse_kinesis_stream     | sparkpipes |" in out
    assert f"Query OK, {N} rows loaded" in out
    assert f"| decoded |\n+---------+\n| {N:<7} |" in out
    assert "| 0            | c00000      | buy        |" in out
    assert "| 1            | c00001      | buy        |" in out
    assert "| c00007      |" in out
    for task in range(4):  # one shard per task
        assert f"| {task}       | 1            |" in out
    assert cfg["aws.secret.key.id"] not in out + p.stderr
