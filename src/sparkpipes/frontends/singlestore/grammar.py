"""The Lark grammar of the sparkpipes SQL dialect and the parser built from it.

The grammar is LALR(1) with Lark's contextual lexer: in each parser state only the
terminals that state accepts are tried, so a keyword is a keyword only where the grammar
can take it and a plain identifier everywhere else (``data``, ``format`` or ``key`` are
fine column names). Keywords are case-insensitive and match whole words only; they are
listed in ``KEYWORDS`` and their terminals are generated below. Words in ``RESERVED``
can never be unquoted identifiers: where an identifier is expected they stop the parse.

Expressions (SET, WHERE, VALUES, computed columns) are parsed structurally only to find
where they end; the parser keeps their source text. Queries, ``INSERT … SELECT`` and
procedure bodies are taken as the rest of the statement (terminal ``REST``).
"""

from __future__ import annotations

import functools

from lark import Lark, Token
from lark.parsers.lalr_analysis import Shift

from sparkpipes.util.userdirs import cached_lark

KEYWORDS: tuple[str, ...] = tuple(
    """
    ADD ALL ALTER AND AS AUTO_INCREMENT BATCHES BATCH_INTERVAL BETWEEN BTREE BY CASE CAST
    CHARACTER CHARSET CHECK CLUSTERED COLLATE COLUMN COLUMNS COLUMNSTORE COMMENT CONFIG CONSTRAINT
    CREATE CREDENTIALS DATA DEFAULT DESC DESCRIBE DISTINCT DIV DROP DUPLICATE EARLIEST ELSE
    ENCLOSED END ERRORS ESCAPE ESCAPED EXISTS EXPLAIN FALSE FIELDS FILE FOR FOREGROUND FORMAT
    FROM GLOBAL GROUP HASH HAVING IF IGNORE ILIKE IN INDEX INFERRED INSERT INTERVAL INTO IS
    JOIN KEY LATEST LIKE LIMIT LINES LOAD MAX_OFFSETS_PER_BATCH_PARTITION
    MAX_PARTITIONS_PER_BATCH MAX_RETRIES_PER_BATCH_PARTITION MOD MODIFY NOT NULL OFFSETS ON
    OPTIONALLY OR ORDER PARSER PERSISTED PIPELINE PIPELINES PRIMARY PROCEDURE PROCEDURES QUERY
    REFERENCE REGEXP REGISTRY REPLACE RETURNS RLIKE ROWSTORE RUNNING SELECT SESSION SET SHARD SHOW
    SCHEMA SKIP SORT SOURCE START STARTING STOP TABLE TABLES TERMINATED TEST THEN TRUE UNION UNIQUE
    UNSIGNED USING VALUES VARIABLES WHEN WHERE WITH XOR USER USERS IDENTIFIED
    GRANT GRANTS REVOKE TO
    OPTIMIZE VACUUM RETAIN HOURS DRY RUN FULL STATUS
    AGGREGATOR ENABLE DISABLE OUT_OF_ORDER OPTIMIZATION METADATA GC DEFINED TRAILING NULLCOLS
    DATABASE USE EXTENDED DETACH LINK LINKS DESCRIPTION LOCAL INFILE TRANSFORM UPDATE SERIES
    FULLTEXT ASC DELETE INNER
    FLUSH NODE EXTRACTOR POOLS INFER HEADER_DETECTION
    """.split()  # noqa: SIM905
)

RESERVED: frozenset[str] = frozenset(
    """
    AND AS BETWEEN BY CASE CREATE DISTINCT DROP ALTER ELSE END EXISTS FALSE FROM GROUP
    HAVING IN INTERVAL INTO IS JOIN LIKE NOT NULL ON OR ORDER PRIMARY RLIKE REGEXP SELECT
    SET TABLE THEN TRUE UNION UNIQUE WHEN WHERE WITH XOR
    """.split()  # noqa: SIM905
)

_PUNCTUATION: dict[str, str] = {
    "LPAR": "(",
    "RPAR": ")",
    "COMMA": ",",
    "DOT": ".",
    "EQ": "=",
    "NSEQ": "<=>",
    "LTGT": "<>",
    "BANGEQ": "!=",
    "LE": "<=",
    "GE": ">=",
    "LT": "<",
    "GT": ">",
    "EQEQ": "==",
    "PLUS": "+",
    "MINUS": "-",
    "STAR": "*",
    "SLASH": "/",
    "PERCENT": "%",
    "CARET": "^",
    "AMP": "&",
    "PIPE": "|",
    "DPIPE": "||",
    "DAMP": "&&",
    "TILDE": "~",
    "BANG": "!",
    "SHL": "<<",
    "SHR": ">>",
    "DCOLON": "::",
    "COLON": ":",
    "ASSIGN": ":=",
    "DOLLAR": "$",
    "AT": "@",
    "DAT": "@@",
    "LARROW": "<-",
    "ARROW": "->",
    "DARROW": "->>",
    "LSQB": "[",
    "RSQB": "]",
    "QMARK": "?",
}

# Shared with the statement splitter, so both agree on where strings and comments are.
IDENT_RE = r"[^\W\d][\w$]*"
QUOTED_IDENT_RE = r"`(?:[^`]|``)*`"
STRING_RE = r"""'(?:[^'\\]|\\[\s\S]|'')*'|"(?:[^"\\]|\\[\s\S]|"")*\""""
NUMBER_RE = r"0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
LINE_COMMENT_RE = r"(?:--|\#)[^\n]*"
BLOCK_COMMENT_RE = r"\/\*[\s\S]*?\*\/"

_RULES = r"""
start: _statement

_statement: create_pipeline
          | create_inferred_pipeline
          | infer_pipeline
          | flush_extractor_pools
          | start_pipeline
          | start_all_pipelines
          | stop_pipeline
          | stop_all_pipelines
          | detach_pipeline
          | drop_pipeline
          | alter_pipeline
          | alter_pipeline_drop_file
          | test_pipeline
          | show_pipelines
          | show_create_pipeline
          | show_create_table
          | show_variables
          | show_tables
          | show_other
          | set_variable
          | create_table
          | drop_table
          | drop_procedure
          | show_procedures
          | describe_table
          | alter_table
          | create_index
          | drop_index
          | insert
          | delete
          | update
          | query
          | create_procedure
          | create_user
          | alter_user
          | drop_user
          | show_users
          | grant
          | revoke
          | show_grants
          | optimize_table
          | vacuum_table
          | show_table_status
          | create_database
          | use_database
          | create_link
          | load_data
          | drop_link
          | show_links
          | show_create_link

name: IDENT | QUOTED_IDENT
// db.name: the database's name, checked when the statement runs (a `name` of two names)
?qname: name | name "." name -> name
// a loaded column as `table.column` or `db.table.column`
?colname: qname | name "." name "." name -> name
int_value: (PLUS | MINUS)? NUMBER
or_replace: OR REPLACE
if_not_exists: IF NOT EXISTS
if_exists: IF EXISTS

// ---------------------------------------------------------------- CREATE PIPELINE
create_pipeline: CREATE or_replace? aggregator? PIPELINE _pipeline_head into_clause load_tail
aggregator: AGGREGATOR
create_inferred_pipeline: CREATE or_replace? INFERRED PIPELINE _named _infer_item* _inferred_into?
_named: if_not_exists? qname AS _loaded
_inferred_into: into_clause load_tail
// INFER PIPELINE | TABLE: what CREATE INFERRED PIPELINE would make, shown
infer_pipeline: INFER (PIPELINE | TABLE) AS _loaded _infer_item* as_json?
_loaded: LOAD DATA (name | link_source) STRING
_infer_item: pipeline_option | fields_clause | lines_clause | ignore_lines | null_defined
           | trailing_nullcols | header_detection
header_detection: HEADER_DETECTION (ON | name)
as_json: AS name
flush_extractor_pools: FLUSH NODE? EXTRACTOR POOLS
_pipeline_head: if_not_exists? qname AS LOAD DATA (name | link_source) STRING pipeline_option*
link_source: LINK qname

// ---------------------------------------------------------------- LOAD DATA (once)
load_data: LOAD DATA (LOCAL? INFILE | name) STRING load_data_option* into_clause load_tail
?load_data_option: SKIP skip_kind ERRORS  -> opt_skip
                 | CONFIG STRING          -> opt_config
                 | CREDENTIALS STRING     -> opt_credentials
                 | REPLACE                -> opt_conflict
                 | IGNORE                 -> opt_conflict
                 | format_clause

?pipeline_option: CONFIG STRING                               -> opt_config
                | CREDENTIALS STRING                          -> opt_credentials
                | BATCH_INTERVAL int_value                    -> opt_batch_interval
                | MAX_PARTITIONS_PER_BATCH int_value          -> opt_max_partitions
                | MAX_OFFSETS_PER_BATCH_PARTITION int_value   -> opt_max_offsets
                | MAX_RETRIES_PER_BATCH_PARTITION int_value   -> opt_max_retries
                | SKIP skip_kind ERRORS                       -> opt_skip
                | SKIP SOURCE CHECK                           -> opt_skip_check
                | WITH TRANSFORM "(" STRING "," STRING "," STRING ")" -> opt_transform
                | toggle OUT_OF_ORDER OPTIMIZATION            -> opt_hint
                | toggle OFFSETS METADATA GC                  -> opt_hint
                | REPLACE                                     -> opt_conflict
                | IGNORE                                      -> opt_conflict
                | format_clause
                | schema_clause

skip_kind: PARSER | ALL | CONSTRAINT | DUPLICATE KEY
toggle: ENABLE | DISABLE
format_clause: FORMAT name

into_clause: INTO TABLE qname
           | INTO PROCEDURE qname

load_tail: _load_item* set_clause? where_clause? on_duplicate?
_load_item: format_clause | load_fields | fields_clause | lines_clause | ignore_lines
          | schema_clause | null_defined | trailing_nullcols
null_defined: NULL DEFINED BY STRING (OPTIONALLY ENCLOSED)?
trailing_nullcols: TRAILING NULLCOLS
// FORMAT AVRO (mapping) SCHEMA '…': the order SingleStore's docs write
schema_clause: SCHEMA REGISTRY? STRING

load_fields: "(" load_field ("," load_field)* ")"
load_field: load_target ("<-" json_path (DEFAULT literal)?)?
load_target: colname           -> column_target
           | "@" name          -> variable_target
           | "@"               -> discard_target
json_path: PERCENT ("::" name)*  -> rooted_path
         | name ("::" name)*     -> key_path

fields_clause: (FIELDS | COLUMNS) field_option+
?field_option: TERMINATED BY STRING              -> fields_terminated
             | OPTIONALLY? ENCLOSED BY STRING    -> fields_enclosed
             | ESCAPED BY STRING                 -> fields_escaped
lines_clause: LINES line_option+
?line_option: TERMINATED BY STRING               -> lines_terminated
            | STARTING BY STRING                 -> lines_starting
ignore_lines: IGNORE int_value LINES

set_clause: SET assignment ("," assignment)*
assignment: name "=" expr_text
where_clause: WHERE expr_text
on_duplicate: ON DUPLICATE KEY UPDATE assignment ("," assignment)*

// ---------------------------------------------------------------- other pipeline statements
start_pipeline: START PIPELINE if_not_running? qname foreground?
if_not_running: IF NOT RUNNING
foreground: FOREGROUND (LIMIT int_value BATCHES)?
start_all_pipelines: START ALL? PIPELINES
stop_pipeline: STOP PIPELINE if_running? qname DETACH?
if_running: IF RUNNING
stop_all_pipelines: STOP ALL PIPELINES
detach_pipeline: DETACH PIPELINE if_exists? qname
drop_pipeline: DROP PIPELINE if_exists? qname
alter_pipeline: ALTER PIPELINE if_exists? qname SET alter_item (("," SET? | SET) alter_item)*
alter_pipeline_drop_file: ALTER PIPELINE if_exists? qname DROP FILE STRING
?alter_item: OFFSETS (EARLIEST | LATEST)                -> alter_offsets
           | OFFSETS STRING                             -> alter_offsets_json
           | BATCH_INTERVAL int_value                   -> opt_batch_interval
           | MAX_PARTITIONS_PER_BATCH int_value         -> opt_max_partitions
           | MAX_OFFSETS_PER_BATCH_PARTITION int_value  -> opt_max_offsets
           | MAX_RETRIES_PER_BATCH_PARTITION int_value  -> opt_max_retries
test_pipeline: TEST PIPELINE qname (LIMIT int_value)?

// ---------------------------------------------------------------- SHOW / SET
show_pipelines: SHOW PIPELINES
show_create_pipeline: SHOW CREATE PIPELINE qname EXTENDED?
show_create_table: SHOW CREATE TABLE qname
show_variables: SHOW show_scope? VARIABLES (LIKE STRING)?
show_tables: SHOW TABLES (LIKE STRING)?
show_procedures: SHOW PROCEDURES (LIKE STRING)?
show_users: SHOW USERS (LIKE STRING)?
show_table_status: SHOW TABLE STATUS (LIKE STRING)?
show_other: SHOW (CREATE | PIPELINES | TABLES | TABLE | VARIABLES | PROCEDURES | USERS
                 | GRANTS)? REST
          | SHOW show_scope VARIABLES? REST
// Not shared with SET's scope: LALR would merge the two states and their lookaheads, and
// the lexer would then read SHOW GLOBAL STATUS's STATUS as an identifier, not as REST.
show_scope: GLOBAL | SESSION
scope: GLOBAL | SESSION

set_variable: SET scope? var_name ("=" | ":=") set_value
            | SET "@@" (scope ".")? var_name ("=" | ":=") set_value
var_name: name ("." name)*
set_value: literal | name | ON

literal: STRING                -> lit_string
       | (PLUS | MINUS)? NUMBER -> lit_number
       | TRUE                  -> lit_true
       | FALSE                 -> lit_false
       | NULL                  -> lit_null

// ---------------------------------------------------------------- databases
create_database: CREATE DATABASE if_not_exists? name
use_database: USE name

// ---------------------------------------------------------------- links
create_link: CREATE LINK if_not_exists? qname AS name link_option*
?link_option: CONFIG STRING       -> opt_config
            | CREDENTIALS STRING  -> opt_credentials
            | DESCRIPTION STRING  -> opt_description
drop_link: DROP LINK if_exists? qname
show_links: SHOW LINKS (ON name)?
show_create_link: SHOW CREATE LINK qname

// ---------------------------------------------------------------- tables
create_table: _create_table_head _table_elements _table_options?
_create_table_head: CREATE table_storage? REFERENCE? TABLE if_not_exists? qname
_table_options: table_option (","? table_option)*
table_option: DEFAULT? (CHARACTER SET | CHARSET) "="? (name | STRING)  -> topt_charset
            | DEFAULT? COLLATE "="? (name | STRING)                   -> topt_collate
            | COMMENT "="? STRING                                      -> topt_comment
            | AUTO_INCREMENT "="? NUMBER                               -> topt_auto_increment
            | name "=" (name | STRING | NUMBER | TRUE | FALSE | ON | DEFAULT | CREATE) -> topt_other
_table_elements: "(" _table_element ("," _table_element)* ")"
table_storage: ROWSTORE | COLUMNSTORE
_table_element: column_def | computed_column | table_key

column_def: name data_type column_attr*
computed_column: name AS expr_text PERSISTED data_type
column_attr: NOT NULL                        -> attr_not_null
            | NULL                            -> attr_null
            | DEFAULT literal                 -> attr_default
            | DEFAULT name                    -> attr_default_word
            | DEFAULT name "(" NUMBER? ")"    -> attr_default_call
            | PRIMARY KEY                     -> attr_primary_key
            | COLLATE (name | STRING)         -> attr_collate
            | CHARACTER SET (name | STRING)   -> attr_charset
            | CHARSET (name | STRING)         -> attr_charset
            | AUTO_INCREMENT                  -> attr_auto_increment
            | COMMENT STRING                  -> attr_comment
            | ON UPDATE name ("(" NUMBER? ")")?  -> attr_on_update
            | SERIES name                     -> attr_series

table_key: PRIMARY KEY name? key_columns index_using?       -> primary_key
         | SHARD KEY? name? key_columns index_using?        -> shard_key
         | SORT KEY name? key_columns index_using?          -> sort_key
         | (KEY | INDEX) name? key_columns index_using?     -> plain_key
         | FULLTEXT (USING name NUMBER)? (KEY | INDEX)? name? key_columns -> fulltext_key
         | UNIQUE (KEY | INDEX)? name? key_columns index_using? -> unique_key
key_columns: "(" (key_column ("," key_column)*)? ")"
key_column: name (ASC | DESC)?
index_using: USING (HASH | BTREE | CLUSTERED COLUMNSTORE)

data_type: type_name type_params? UNSIGNED?
         | type_name "<" _type_arg ("," _type_arg)* ">"   -> generic_type
         | type_name "(" STRING ("," STRING)* ")"          -> member_type
         | type_name "(" NUMBER "," IDENT ")"              -> element_type
type_name: IDENT | SET
type_params: "(" NUMBER ("," NUMBER)* ")"
_type_arg: data_type | struct_field
struct_field: name ":"? data_type
query_type: QUERY "(" query_field ("," query_field)* ")"
query_field: name ":"? data_type query_null?
query_null: NOT NULL -> query_not_null
          | NULL     -> query_nullable

drop_table: DROP TABLE if_exists? qname
describe_table: (DESCRIBE | DESC) name ("." name)?
alter_table: ALTER TABLE qname ADD COLUMN? (column_def | computed_column)
           | ALTER TABLE qname DROP COLUMN? name                  -> alter_table_drop
           | ALTER TABLE qname MODIFY COLUMN? (column_def | computed_column) -> alter_table_modify
create_index: CREATE INDEX name ON qname key_columns
optimize_table: OPTIMIZE TABLE qname FULL?
vacuum_table: VACUUM TABLE? qname (RETAIN int_value HOURS)? (DRY RUN)?
drop_index: DROP INDEX name ON qname

// ---------------------------------------------------------------- DML, queries, procedures
insert: _insert_verb INTO qname insert_columns? VALUES insert_row ("," insert_row)*
      | _insert_verb INTO qname insert_columns? insert_query
_insert_verb: INSERT IGNORE? | REPLACE
insert_columns: "(" name ("," name)* ")"
insert_row: "(" (expr_text ("," expr_text)*)? ")"
insert_query: LPAR? (SELECT | WITH) REST?
delete: DELETE FROM qname (AS? name)? where_clause? order_by? limit?
      | DELETE name FROM delete_table _join delete_table delete_on? _joined -> delete_join
_joined: where_clause? limit?
delete_table: qname (AS? name)?
_join: INNER? JOIN | ","
delete_on: ON expr_text
update: UPDATE qname (AS? name)? set_clause where_clause? order_by? limit?
// MySQL's single-table DELETE and UPDATE: the first n rows that match, in this order
order_by: ORDER BY order_item ("," order_item)*
order_item: expr_text (ASC | DESC)?
limit: LIMIT int_value

query: (SELECT | WITH | EXPLAIN | LPAR) REST?

create_procedure: CREATE or_replace? PROCEDURE qname _proc_params (RETURNS data_type)? AS REST
drop_procedure: DROP PROCEDURE if_exists? qname

// ---------------------------------------------------------------- users
create_user: CREATE USER if_not_exists? user_name IDENTIFIED BY STRING
alter_user: ALTER USER user_name IDENTIFIED BY STRING
drop_user: DROP USER if_exists? user_name
user_name: (name | STRING) (AT (name | STRING))?
show_grants: SHOW GRANTS (FOR user_name)?
grant: GRANT privileges ON priv_level TO user_names (WITH GRANT name)?
revoke: REVOKE privileges ON priv_level FROM user_names
privileges: privilege ("," privilege)*
privilege: priv_word+
priv_word: SELECT | INSERT | CREATE | DROP | ALTER | INDEX | PIPELINE | START | SHOW | USER
         | ALL | GRANT | FILE | name
priv_level: STAR (DOT STAR)? | name DOT (STAR | name) | name
user_names: user_name ("," user_name)*
_proc_params: "(" (proc_param ("," proc_param)*)? ")"
proc_param: name (data_type | query_type)

// ---------------------------------------------------------------- expressions (kept as text)
expr_text: expr

?expr: or_expr
     | or_expr ("->" | "->>") expr
?or_expr: or_expr OR xor_expr | xor_expr
?xor_expr: xor_expr XOR and_expr | and_expr
?and_expr: and_expr (AND | "&&") not_expr | not_expr
?not_expr: NOT not_expr | bool_primary
?bool_primary: bool_primary IS NOT? (NULL | TRUE | FALSE)
             | bool_primary IS NOT? DISTINCT FROM predicate
             | bool_primary comp_op predicate
             | predicate
comp_op: "=" | "<=>" | "<>" | "!=" | "<" | "<=" | ">" | ">=" | "=="
?predicate: bit_expr NOT? IN in_list
          | bit_expr NOT? BETWEEN bit_expr AND predicate
          | bit_expr NOT? (LIKE | ILIKE | RLIKE | REGEXP) bit_expr (ESCAPE STRING)?
          | bit_expr
in_list: "(" expr ("," expr)* ")"
       | "(" subquery ")"
?bit_expr: bit_expr "|" bit_and | bit_and
?bit_and: bit_and "&" shift_expr | shift_expr
?shift_expr: shift_expr ("<<" | ">>") add_expr | add_expr
?add_expr: add_expr ("+" | "-" | "||") mul_expr | mul_expr
?mul_expr: mul_expr ("*" | "/" | "%" | DIV | MOD) bxor_expr | bxor_expr
?bxor_expr: bxor_expr "^" unary | unary
// the sign is a kept token: an inlined unary over a number would lose it from the span
?unary: (MINUS | PLUS | TILDE | BANG) unary | postfix
?postfix: postfix "::" json_key
        | postfix "[" expr "]"
        | postfix "." name
        | primary
json_key: "$" name | "%" name? | name
?primary: STRING | NUMBER | TRUE | FALSE | NULL
        | name
        | name STRING                              -> typed_literal
        | name "(" (DISTINCT? func_args)? ")"      -> func_call
        | name "(" "*" ")"                         -> func_call
        | "(" expr ("," expr)* ")"                 -> paren
        | "(" subquery ")"                         -> scalar_subquery
        | EXISTS "(" subquery ")"                  -> exists
        | CASE expr? case_when+ (ELSE expr)? END   -> case
        | CAST "(" expr AS data_type ")"           -> cast
        | "@" name                                 -> user_variable
        | "@@" name                                -> system_variable
        | INTERVAL interval_value name?            -> interval
        | "?"                                      -> placeholder
case_when: WHEN expr THEN expr
func_args: expr ((","| FROM | FOR | USING) expr)*
interval_value: STRING | NUMBER | "-" NUMBER | name | "(" expr ")"

// Balanced token soup: a subquery inside an expression, kept as text.
subquery: (SELECT | WITH) _sq_item*
_sq_item: sq_group | sq_token
sq_group: "(" _sq_item* ")"
sq_token: %SQ_TOKENS%
"""

_TERMINALS = rf"""
IDENT: /{IDENT_RE}/
QUOTED_IDENT: /{QUOTED_IDENT_RE}/
STRING: /{STRING_RE}/
NUMBER: /{NUMBER_RE}/
REST.-1: /[\s\S]+/
WS: /\s+/
LINE_COMMENT: /{LINE_COMMENT_RE}/
BLOCK_COMMENT: /{BLOCK_COMMENT_RE}/
%ignore WS
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
%declare RESERVED
"""


def _lark_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def grammar_text() -> str:
    """The complete Lark grammar: rules, punctuation, keyword and literal terminals."""
    soup = [*KEYWORDS, "RESERVED", "IDENT", "QUOTED_IDENT", "STRING", "NUMBER"]
    soup += [n for n in _PUNCTUATION if n not in ("LPAR", "RPAR")]
    rules = _RULES.replace("%SQ_TOKENS%", " | ".join(soup))
    punct = "\n".join(f"{n}: {_lark_string(v)}" for n, v in _PUNCTUATION.items())
    words = "\n".join(f"{k}.2: /{k.lower()}(?![\\w$])/i" for k in KEYWORDS)
    return f"{rules}\n{punct}\n{words}\n{_TERMINALS}"


def _reserve(token: Token) -> Token:
    if token.value.upper() in RESERVED:
        return Token.new_borrow_pos("RESERVED", token.value, token)
    return token


@functools.cache
def parser(start: str = "start") -> Lark:
    """The shared LALR parser for one statement (the splitter has already cut the script);
    its tables come from the user's cache when they can (``util.userdirs.cached_lark``).
    ``start``: another rule to parse a part of a statement with (``on_duplicate``, the
    tail of an ``INSERT … SELECT``, which the query's text would otherwise swallow)."""
    return cached_lark(
        grammar_text(),
        start=start,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        lexer_callbacks={"IDENT": _reserve},
    )


@functools.cache
def identifier_keywords() -> frozenset[str]:
    """Words that cannot be written bare where an identifier is expected.

    That is every reserved word, plus every keyword that some parser state accepts next to
    an identifier (there the contextual lexer would read it as the keyword); the token soup
    of subqueries, which accepts every word, does not count. Derived from
    the parse table; falls back to all keywords if Lark's internals ever move.
    """
    words = set(RESERVED)
    try:
        states = parser().parser.parser.parser.parse_table.states
        for actions in states.values():
            shifts_ident = actions.get("IDENT", (None,))[0] is Shift
            if shifts_ident and "RESERVED" not in actions:
                words.update(t for t in actions if t in _KEYWORD_SET)
    except AttributeError:  # pragma: no cover
        words.update(KEYWORDS)
    return frozenset(words)


_KEYWORD_SET = frozenset(KEYWORDS)


def terminal_display(name: str) -> str | None:
    """How a terminal is named in an error message; None hides it from "expected …"."""
    if name in _KEYWORD_SET:
        return name
    if name in _PUNCTUATION:
        return f"'{_PUNCTUATION[name]}'"
    return {
        "IDENT": "identifier",
        "QUOTED_IDENT": "identifier",
        "STRING": "string",
        "NUMBER": "number",
        "$END": "end of statement",
    }.get(name)
