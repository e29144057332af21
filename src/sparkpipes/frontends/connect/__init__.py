"""Kafka Connect sink connectors as a front end (seed 001).

``model`` — connector configs as Kafka Connect and its connectors document them
(converters, ``topics`` / ``topics.regex``; ``sink_config`` the checked config;
``singlestore_sink`` and ``legacy`` the SingleStore sink's keys and other releases' names;
``jdbc_sink`` Confluent's JDBC sink's keys; ``shape``: JSON and ``.properties`` files,
pipeline names);
``service`` — ``Connectors``: create, change, pause, resume, restart, delete, status, and
new pipelines for topics that come to match ``topics.regex`` (an engine extension), with
``tables`` (the tables a connector finds or creates), ``jdbc_lowering`` (the JDBC sink's
pipelines), ``lifecycle`` (state, offsets, topics, tasks), ``deadletter`` (the dead-letter
topic) and
``sources`` (source connectors created through the REST API, into tables named as their
topics); ``plugins`` and ``validate`` answer ``/connector-plugins``. Source connectors
themselves are sources (``sources.connect``). It may import the engine and the
core, not the other front ends, ``cli`` or ``server``.
"""
