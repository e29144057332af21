"""src/sparkpipes/sinks/delta"""
