"""src/sparkpipes/frontends"""
