"""Kafka Connect sink connectors as a front end (seed 001).

``model`` — connector configs as Kafka Connect and its connectors document them
(converters, ``topics`` / ``topics.regex``, the JDBC and SingleStore sinks' keys);
``service`` — ``Connectors``: create, change, pause, resume, restart, delete, status, and
new pipelines for topics that come to match ``topics.regex`` (an engine extension).
Source connectors are sources (``sources.connect``). It may import the engine and the
core, not the other front ends, ``cli`` or ``server``.
"""
