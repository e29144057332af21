"""The SQL front end's public names, where users import them (``sparkpipes.sql.parse``).

The front end itself lives in :mod:`sparkpipes.frontends.singlestore`; this package only
re-exports its parser, AST and errors so that code written against ``sparkpipes.sql`` keeps
working. It may import that package and nothing else.
"""

from sparkpipes.frontends.singlestore import *  # noqa: F403
from sparkpipes.frontends.singlestore import __all__  # noqa: F401
