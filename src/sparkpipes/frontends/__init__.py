"""Front ends: one package per way users describe pipelines, none knowing another.

Each holds a typed **model** of what the user wrote, a **lowering** into the core's
``PipelineSpec`` and back (SHOW CREATE is the lowering run backwards), and a **service**
with the operations the adapters (``cli``, ``server``) call:

- ``singlestore`` — SingleStore's pipeline SQL: lexer, grammar, parser, typed AST, script
  splitting, ``CREATE TABLE | PIPELINE | PROCEDURE`` lowering, users and GRANT, and the
  statement session (``executor.SqlSession``) that runs them on the engine;
- ``pinot`` — Pinot schemas, REALTIME table configs, ``streamConfigs``, ingestion
  expressions, upsert and security settings; the service keeps Pinot tables' own upkeep;
- ``connect`` — Kafka Connect sink connector configs; the service makes and keeps their
  pipelines (``topics.regex`` included).

A front end may import the engine, the core (``config``, ``catalog``), the plugins and
``errors``/``util``; never ``cli``, ``server`` or another front end (``.importlinter``).
Services that live as long as an engine register in ``engine.extensions``.
"""
