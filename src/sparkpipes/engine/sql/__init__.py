"""src/sparkpipes/engine/sql"""
