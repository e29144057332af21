"""src/sparkpipes/frontends/connect"""
