"""src/sparkpipes/engine/batch"""
