"""Statements shared by the SQL front-end tests: the seed examples and one of every form."""

SEED_PROCEDURE = """CREATE OR REPLACE PROCEDURE parse_kinesis_stream (
    batch QUERY(`topic` TEXT, `id` TEXT, `record` JSON)
) AS
BEGIN
  -- one row per Kinesis record
  INSERT INTO parsed_kinesis_stream (partitionKey, sequence_number, shardId, data_base64)
  SELECT record::$partitionKey, record::$sequenceNumber, record::$shardId, record::$data
  FROM batch;
END;"""

SEED = [
    "CREATE INFERRED PIPELINE kinesis_pipeline AS LOAD DATA KAFKACONNECT 'kafka-connector' "
    """CONFIG '{"connector.class": "x", "tasks.max": 4}' CREDENTIALS '{}' FORMAT AVRO;""",
    "CREATE PIPELINE kinesis_pipeline_to_proc AS LOAD DATA KAFKACONNECT 'kafka-connector' "
    """CONFIG '{"a":1}' CREDENTIALS '{}' BATCH_INTERVAL 2500 """
    "INTO PROCEDURE parse_kinesis_stream FORMAT AVRO "
    "(`topic` <- `topic`, `id` <- `id`, `record` <- `record`);",
    "CREATE TABLE parsed_kinesis_stream (partitionKey BIGINT, sequence_number VARCHAR(255), "
    "shardId VARCHAR(255), data_base64 VARCHAR(255), "
    "parsed_data AS FROM_BASE64(data_base64) PERSISTED VARCHAR(255));",
    'SET GLOBAL experimental_features_config = "kafka_connect_enabled=true"',
    "SHOW VARIABLES LIKE 'experimental_features_config'",
    "CREATE PIPELINE p AS LOAD DATA KAFKA '127.0.0.1:9092/events' BATCH_INTERVAL 1000 "
    "SKIP PARSER ERRORS INTO TABLE events FORMAT JSON "
    "(ts <- ts, id <- payload::id, c <- `count`) SET ingested = NOW() WHERE c > 0;",
    "CREATE PIPELINE f AS LOAD DATA FS '/data/*.csv' INTO TABLE t "
    """FIELDS TERMINATED BY ',' ENCLOSED BY '"' IGNORE 1 LINES (a, b, c);""",
    SEED_PROCEDURE,
    "ALTER TABLE t ADD COLUMN status AS (JSON_EXTRACT_STRING(record, 'status')) PERSISTED STRING",
]

MORE = [
    "INFER PIPELINE AS LOAD DATA FS '/in/*.csv' FIELDS TERMINATED BY ';' IGNORE 2 LINES "
    "HEADER_DETECTION OFF",
    "INFER TABLE AS LOAD DATA S3 'b/k.avro' CONFIG '{\"region\": \"r\"}' FORMAT AVRO",
    "CREATE INFERRED PIPELINE books AS LOAD DATA FS '/in/*.parquet' FORMAT PARQUET",
    "FLUSH EXTRACTOR POOLS",
    "FLUSH NODE EXTRACTOR POOLS",
    "DELETE FROM t WHERE a > 1 ORDER BY a DESC, b LIMIT 3",
    "UPDATE t SET a = a + 1 WHERE b IS NULL ORDER BY ts LIMIT 1",
    "DELETE t FROM t JOIN u ON t.a = u.a WHERE u.b LIMIT 2",
    "OPTIMIZE TABLE t",
    "OPTIMIZE TABLE `my events` FULL",
    "VACUUM t",
    "VACUUM TABLE t RETAIN 24 HOURS DRY RUN",
    "VACUUM t DRY RUN",
    "SHOW TABLE STATUS",
    "SHOW TABLE STATUS LIKE 'ev%'",
    "CREATE PIPELINE a AS LOAD DATA KAFKA 'h:9092/t' INTO TABLE t FORMAT AVRO SCHEMA REGISTRY "
    "'http://registry:8081' (id <- id, city <- address::city)",
    "CREATE PIPELINE b AS LOAD DATA KAFKA 'h:9092/t' INTO TABLE t FORMAT AVRO SCHEMA "
    '\'{"type": "record", "name": "r", "fields": []}\'',
    "ALTER TABLE t ADD COLUMN customer_id AS (JSON_EXTRACT_STRING(record, 'customer_id')) "
    "PERSISTED INT",
    "CREATE INDEX idx_customer_id ON t(customer_id)",
    "CREATE INDEX idx_status ON kinesis_pipeline(status);",
    "ALTER TABLE t DROP COLUMN status",
    "ALTER TABLE `my t` MODIFY COLUMN n BIGINT NOT NULL",
    "ALTER TABLE t MODIFY amount DECIMAL(10, 2) NULL",
    "CREATE OR REPLACE PIPELINE IF NOT EXISTS p AS LOAD DATA S3 'bucket/key' "
    """CONFIG '{"region": "eu"}' CREDENTIALS '{"key": 1}' MAX_PARTITIONS_PER_BATCH 4 """
    "MAX_OFFSETS_PER_BATCH_PARTITION 100 MAX_RETRIES_PER_BATCH_PARTITION 2 SKIP ALL ERRORS "
    "REPLACE INTO TABLE t FORMAT JSON (a <- %, @b <- %::x::y DEFAULT 5, c <- x::`y z`) "
    "SET a = CASE WHEN @b > 1 THEN 'x' ELSE record::$f END, d = CAST(x AS DECIMAL(10,2)) "
    "WHERE a IS NOT NULL AND b NOT IN (1, 2) OR c BETWEEN 1 AND 5 AND d LIKE 'x%'",
    "CREATE PIPELINE p AS LOAD DATA FS '/x' IGNORE INTO TABLE t FORMAT CSV "
    "COLUMNS TERMINATED BY '\\t' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' "
    "LINES TERMINATED BY '\\n' STARTING BY 'x' IGNORE 2 LINES (a, @b) SET c = @b + 1",
    "CREATE PIPELINE p AS LOAD DATA KAFKA 'k/t' SKIP DUPLICATE KEY ERRORS INTO TABLE t "
    "FORMAT PARQUET (a <- a)",
    # refused when lowered
    "CREATE PIPELINE p AS LOAD DATA KAFKA 'k/t' REPLACE INTO TABLE t FORMAT JSON "
    "ON DUPLICATE KEY UPDATE a = VALUES(a)",
    "CREATE ROWSTORE REFERENCE TABLE IF NOT EXISTS t (id BIGINT NOT NULL PRIMARY KEY "
    "AUTO_INCREMENT, name VARCHAR(20) CHARACTER SET utf8 COLLATE utf8_bin DEFAULT 'x' "
    "COMMENT 'c', m MAP<STRING, ARRAY<INT>>, s STRUCT<a: INT, b STRING>, "
    "ts DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6), u INT UNSIGNED NULL, SHARD KEY (id), "
    "SORT KEY s1 (name), KEY (name) USING HASH, "
    "UNIQUE KEY uk (id, name) USING CLUSTERED COLUMNSTORE)",
    "CREATE COLUMNSTORE TABLE t (a INT, b DOUBLE DEFAULT -1.5, INDEX i (a), "
    "PRIMARY KEY (a) USING HASH, SHARD KEY ())",
    "DROP TABLE IF EXISTS t",
    "DROP PROCEDURE IF EXISTS parse_kinesis_stream",
    "SHOW PROCEDURES LIKE 'parse%'",
    "CREATE USER IF NOT EXISTS 'ana'@'%' IDENTIFIED BY 'pa''ss'",
    'CREATE USER bo IDENTIFIED BY "x"',
    "ALTER USER 'ana' IDENTIFIED BY 'new'",
    "DROP USER IF EXISTS `ana`",
    "SHOW USERS",
    "SHOW USERS LIKE 'a%'",
    "GRANT SELECT, INSERT ON sparkpipes.events TO 'bo'@'%'",
    "GRANT ALL PRIVILEGES ON *.* TO ana WITH GRANT OPTION",
    "GRANT CREATE PIPELINE, START PIPELINE ON * TO 'bo', cy",
    "REVOKE SHOW PIPELINE ON `events` FROM bo",
    "SHOW GRANTS",
    "SHOW GRANTS FOR 'bo'@'%'",
    "REPLACE INTO t (a, b) SELECT a, b FROM s",
    "SHOW TABLES LIKE 'x%'",
    "DESC t",
    "DESCRIBE `my t`",
    "CREATE INDEX i ON t (a, b)",
    "DROP INDEX `idx status` ON `my t`",
    "START ALL PIPELINES",
    "STOP ALL PIPELINES",
    "STOP PIPELINE IF RUNNING p",
    "DROP PIPELINE IF EXISTS p",
    "TEST PIPELINE p LIMIT 5",
    "SHOW PIPELINES",
    "SHOW CREATE PIPELINE p",
    "START PIPELINE IF NOT RUNNING p FOREGROUND LIMIT 3 BATCHES",
    "ALTER PIPELINE IF EXISTS p SET OFFSETS '{\"0\": 10}', SET MAX_PARTITIONS_PER_BATCH 2, "
    "MAX_OFFSETS_PER_BATCH_PARTITION 3, MAX_RETRIES_PER_BATCH_PARTITION 4",
    "ALTER PIPELINE p SET OFFSETS EARLIEST, BATCH_INTERVAL 0",
    "ALTER PIPELINE IF EXISTS p DROP FILE 'bucket/a b''s.json'",
    # SingleStore's own spellings (its docs and demos)
    "CREATE PIPELINE dc AS LOAD DATA FS '/in/*.csv' INTO TABLE t (a, @, @, b)",
    "CREATE PIPELINE nd AS LOAD DATA FS '/in/*.csv' INTO TABLE t FIELDS TERMINATED BY ',' "
    "TRAILING NULLCOLS NULL DEFINED BY 'nil' OPTIONALLY ENCLOSED IGNORE 1 LINES (a, b)",
    "ALTER PIPELINE p SET BATCH_INTERVAL 30000 SET OFFSETS LATEST",
    "CREATE TABLE k (a INT, b INT, PRIMARY KEY pk (a), SHARD (b))",
    "CREATE TABLE k2 (a INT, SHARD KEY (a) USING CLUSTERED COLUMNSTORE)",
    "CREATE AGGREGATOR PIPELINE ap AS LOAD DATA KAFKA 'h:9092/t' "
    "DISABLE OUT_OF_ORDER OPTIMIZATION ENABLE OFFSETS METADATA GC INTO TABLE t FORMAT JSON",
    "CREATE PIPELINE av AS LOAD DATA KAFKA 'h:9092/t' INTO TABLE t FORMAT AVRO (a <- a) "
    """SCHEMA '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}'""",
    "SET x = 1",
    "SET SESSION y = 'a'",
    "SET @@GLOBAL.z = -1.5",
    "SET spark.sql.shuffle.partitions = 4",
    "SET GLOBAL q := OFF",
    "SHOW GLOBAL VARIABLES",
    "SHOW SESSION VARIABLES LIKE 'a'",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "EXPLAIN SELECT 1",
    "(SELECT 1) UNION (SELECT 2)",
    "SHOW DATABASES",
    "SHOW CREATE TABLE t",
    "INSERT INTO t (a, b) VALUES (1, 'x'), (2, NULL)",
    "INSERT INTO t SELECT * FROM u WHERE v > 0",
    "DELETE FROM t WHERE id IN (SELECT id FROM batch) AND v IS NOT NULL",
    "UPDATE t AS x SET n = n + 1, v = (SELECT max(v) FROM u WHERE u.id = x.id) WHERE x.id > 0",
    "INSERT INTO t VALUES (f(a, b), -x::%y, a || b, `c`[0], x.y.z, @@v, ?, INTERVAL 1 DAY, "
    "EXISTS (SELECT 1 FROM (SELECT 2) q), (SELECT max(a) FROM t), DATE '2020-01-01', "
    "transform(arr, x -> x + 1), count(*), count(DISTINCT a), EXTRACT(YEAR FROM ts), "
    "a <=> b, a != b, NOT a, !a, ~a, a DIV b MOD c % d, a << 2 >> 1 & 3 | 4 ^ 5, "
    "a XOR b && c, record::%)",
    "CREATE PROCEDURE p() RETURNS INT AS DECLARE x INT = 0; BEGIN IF x > 0 THEN x = 1; "
    "END IF; CASE x WHEN 1 THEN y(); END CASE; WHILE x DO x = CASE WHEN a THEN 1 END; "
    "END WHILE; END",
]

ALL = SEED + MORE
