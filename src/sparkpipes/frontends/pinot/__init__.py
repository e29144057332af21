"""Pinot realtime ingestion as a front end (seeds 002, 003).

``model`` — schemas and REALTIME table configs as Pinot documents them, checked key by key;
``stream`` — ``streamConfigs`` (Kafka and stream plugins, decoders, offsets, flush);
``multistream`` — several streams into one table (Pinot's rules, pipeline names,
partition ids); ``upsert``, ``security``, ``units`` — their parts; ``expr`` — Pinot's ingestion
expressions (``transformFunction``, ``filterFunction``) translated to Spark SQL;
``lowering`` — schema + table config into a ``PipelineSpec`` and a table, and back;
``service`` — ``PinotTables``: add, list, show, delete, and each table's own retention
and flush thresholds (an engine extension). It may import the engine and the core, not
the other front ends, ``cli`` or ``server``.
"""
