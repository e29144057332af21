"""Spark itself: ``session`` makes the SparkSession (local by default, quiet logging,
authenticated RPC) and warms it up; ``cluster`` runs a standalone cluster on 127.0.0.1 and
ships this package to its executors. It imports nothing of sparkpipes but ``errors`` and
``util``.
"""
