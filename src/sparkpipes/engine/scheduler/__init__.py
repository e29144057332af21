"""src/sparkpipes/engine/scheduler"""
