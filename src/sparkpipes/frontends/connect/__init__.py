"""Kafka Connect sink connectors as a front end (seed 001).

``model`` — connector configs as Kafka Connect and its connectors document them
(converters, ``topics`` / ``topics.regex``, the JDBC and SingleStore sinks' keys; ``legacy``:
the names of other releases; ``shape``: JSON and ``.properties`` files, pipeline names);
``service`` — ``Connectors``: create, change, pause, resume, restart, delete, status, and
new pipelines for topics that come to match ``topics.regex`` (an engine extension), with
``lifecycle`` (state, offsets, topics, tasks), ``deadletter`` (the dead-letter topic) and
``sources`` (source connectors created through the REST API, into tables named as their
topics); ``plugins`` and ``validate`` answer ``/connector-plugins``. Source connectors
themselves are sources (``sources.connect``). It may import the engine and the
core, not the other front ends, ``cli`` or ``server``.
"""
