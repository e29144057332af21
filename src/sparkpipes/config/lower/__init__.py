"""Front ends lowered into ``PipelineSpec`` and back, one module each.

``kwargs`` — the Python API's flat options (and the catalog's version-1 definitions);
``sql`` — ``CREATE PIPELINE`` in the SingleStore dialect, and ``SHOW CREATE PIPELINE``.
A front end never reaches past the spec into the engine.
"""
