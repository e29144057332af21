"""What mysql-mimic may evaluate itself: the shapes of connection and catalog chatter only.

mysql-mimic answers a client's ``SELECT @@version_comment``, ``SELECT DATABASE()``,
``SHOW TABLES`` and ``information_schema.TABLES|COLUMNS`` queries with sqlglot's Python
executor, which turns the statement into Python source and runs it. That generator does
not quote everything it writes (a JSON path key, an ``EXTRACT`` unit, an interval unit are
pasted into the source as they are), so a user's expression there is code run in the
server. Before mysql-mimic evaluates anything, :func:`check` walks the statement and admits
only what that chatter is made of: a ``SELECT`` of literals, variables already replaced by
their values, columns and a few plain functions, from one ``information_schema`` table,
filtered by comparisons, ordered and limited; names and strings without quotes or
backslashes. Anything else is refused (error ``SP103``), never evaluated; sparkpipes'
own statements run on Spark behind the query sandbox instead.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sparkpipes.errors import NotAdmittedError

#: the node types that chatter is made of (after mysql-mimic put variables' values in)
ADMITTED: tuple[type[exp.Expression], ...] = (
    exp.Select,
    exp.From,
    exp.Table,
    exp.TableAlias,
    exp.Where,
    exp.Order,
    exp.Ordered,
    exp.Limit,
    exp.Offset,
    exp.Group,
    exp.Distinct,
    exp.Alias,
    exp.Identifier,
    exp.Column,
    exp.Star,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Paren,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.And,
    exp.Or,
    exp.Not,
    exp.In,
    exp.Is,
    exp.Like,
    exp.ILike,
    exp.Count,
    exp.Lower,
    exp.Upper,
)
#: names and strings the executor's generated source holds verbatim or quoted
_PLAIN = re.compile(r"[^'\"\\`\x00-\x1f]*")


def check(expression: exp.Expression) -> None:
    """Raise :class:`NotAdmittedError` unless every node of ``expression`` is chatter."""
    for node in expression.walk():
        if not isinstance(node, ADMITTED):
            raise NotAdmittedError(
                f"{node.key.upper()} is not admitted in a query of variables or of "
                "information_schema.TABLES|COLUMNS over the MySQL protocol; "
                "query the values another way (SELECT … FROM a table runs on Spark)"
            )
        if isinstance(node, exp.Identifier | exp.Literal) and not _PLAIN.fullmatch(str(node.this)):
            raise NotAdmittedError(
                "quotes, backslashes and control characters are not admitted in the names "
                "and strings of a query of variables or of information_schema.TABLES|COLUMNS"
            )
