"""``ON DUPLICATE KEY UPDATE`` expressions as the fold reads them: bare names are the
stored row's columns (``s``), ``VALUES(col)`` the new row's (``r``), as in MySQL."""

import pytest

from sparkpipes.engine.sql.updates import update_expression
from sparkpipes.errors import ConfigError

COLUMNS = ["icao", "count", "note", "time_position"]


@pytest.mark.parametrize(
    "text, spark",
    [
        ("count + 1", "s.`count` + 1"),
        ("VALUES(flightlocs.time_position)", "r.`time_position`"),
        ("GREATEST(count, VALUES(count))", "GREATEST(s.`count`, r.`count`)"),
        ("flightlocs.count * 2", "s.`count` * 2"),
        ("`note`", "s.`note`"),
        ("CONCAT(note, '-', VALUES(note))", "CONCAT(s.`note`, '-', r.`note`)"),
        (
            "CASE WHEN count IS NULL THEN 0 ELSE count END",
            "CASE WHEN s.`count` IS NULL THEN 0 ELSE s.`count` END",
        ),
        ("count + INTERVAL 1 DAY", "s.`count` + INTERVAL 1 DAY"),
        ("'count'", "'count'"),  # a string stays a string
        ("now()", "now()"),
    ],
)
def test_bare_names_read_the_stored_row_and_values_the_new_one(text, spark):
    assert update_expression(text, COLUMNS, "flightlocs") == spark


@pytest.mark.parametrize(
    "text, error",
    [
        ("nope + 1", "'nope' in 'nope + 1' is no column of table 'flightlocs'"),
        ("VALUES(nope)", "'nope' in 'VALUES(nope)' is no column"),
        ("VALUES(other.count)", "VALUES() names one column"),
        ("@v + 1", "not variables"),
    ],
)
def test_what_is_not_a_column_of_the_table_is_named(text, error):
    with pytest.raises(
        ConfigError, match=error.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")
    ):
        update_expression(text, COLUMNS, "flightlocs")
