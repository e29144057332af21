"""src/sparkpipes/engine/spark"""
