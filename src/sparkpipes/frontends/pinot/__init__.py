"""src/sparkpipes/frontends/pinot"""
