"""What the engine does with user SQL before Spark runs it.

``dialect`` — SingleStore's expressions and functions translated to Spark SQL (the
expression language of every ``PipelineSpec``: SET, WHERE, computed columns, procedure
bodies, queries); ``sandbox`` + ``allowlists`` — every statement checked on Spark's own
parse before it runs; ``identity`` — who is asking, for the functions that say so. It may
import the core and ``errors``.
"""
