"""What the query sandbox (:mod:`sparkpipes.engine.sql.sandbox`) admits, as data.

Every list is an allow-list: a node class, function or table function not named here is
refused. The node classes are the ones Spark's SQL parser builds for queries (read off its
``AstBuilder``), each reviewed; DDL, commands, file and directory access, scripts,
variables, parameters, cursors, ``IDENTIFIER(…)`` and ``EXECUTE IMMEDIATE`` are left out.
Spark's built-in functions are admitted except :data:`DENIED_FUNCTIONS`, which reach the
file system, the network or the JVM; ``tests/integration/test_sandbox.py`` fails when a
Spark release adds a function that is in neither set, so an upgrade cannot admit one
unreviewed.
"""

from __future__ import annotations

#: relational operators of a query (class names below ``org.apache.spark.sql.catalyst.``)
PLANS = frozenset(
    """
    analysis.UnresolvedHaving analysis.UnresolvedInlineTable analysis.UnresolvedQualify
    analysis.UnresolvedRelation analysis.UnresolvedSubqueryColumnAliases
    analysis.UnresolvedTVFAliases analysis.UnresolvedTableValuedFunction
    plans.logical.Aggregate plans.logical.Distinct plans.logical.Except plans.logical.Filter
    plans.logical.Generate plans.logical.GlobalLimit plans.logical.Intersect
    plans.logical.Join plans.logical.LateralJoin plans.logical.LimitAll
    plans.logical.LocalLimit plans.logical.LocalRelation plans.logical.Offset
    plans.logical.OneRowRelation plans.logical.Pivot plans.logical.Project
    plans.logical.RepartitionByExpression plans.logical.Sample plans.logical.Sort
    plans.logical.SubqueryAlias plans.logical.Union plans.logical.Unpivot
    plans.logical.UnresolvedHint plans.logical.UnresolvedWith
    """.split()  # noqa: SIM905
)

#: read-only statements about the session's tables and functions, admitted as a whole
#: statement only (their query, if any, is checked like any other). Spark's SHOW TABLES
#: and SHOW VIEWS are not: they list every table, whatever the user may see, and the
#: session's internal views; the dialect's own SHOW TABLES lists the tables a user may see
COMMANDS = frozenset(
    """
    analysis.CurrentNamespace$ analysis.UnresolvedAttribute analysis.UnresolvedFunctionName
    analysis.UnresolvedNamespace analysis.UnresolvedTableOrView
    org.apache.spark.sql.execution.command.DescribeQueryCommand
    org.apache.spark.sql.execution.command.ExplainCommand
    org.apache.spark.sql.execution.command.ShowCurrentNamespaceCommand
    org.apache.spark.sql.execution.command.ShowNamespacesCommand
    plans.logical.DescribeColumn plans.logical.DescribeFunction
    plans.logical.DescribeRelation plans.logical.ShowColumns plans.logical.ShowFunctions
    """.split()  # noqa: SIM905
)

#: scalar syntax: operators, literals, names, subqueries, windows, lambdas
EXPRESSIONS = frozenset(
    """
    analysis.MultiAlias analysis.NamedParameter analysis.UnresolvedAlias
    analysis.UnresolvedAttribute
    analysis.UnresolvedExtractValue analysis.UnresolvedFunction analysis.UnresolvedGenerator
    analysis.UnresolvedOrdinal analysis.UnresolvedPipeAggregateOrdinal
    analysis.UnresolvedRegex analysis.UnresolvedStar analysis.UnresolvedStarExceptOrReplace
    expressions.Add expressions.Alias expressions.And expressions.Ascending$
    expressions.AttributeReference expressions.BitwiseAnd expressions.BitwiseNot
    expressions.BitwiseOr expressions.BitwiseXor expressions.CaseWhen expressions.Cast
    expressions.Coalesce expressions.Collate expressions.Concat
    expressions.CreateNamedStruct expressions.CreateStruct expressions.Cube
    expressions.CurrentDate expressions.CurrentRow$ expressions.CurrentTime
    expressions.CurrentTimestamp expressions.CurrentUser expressions.Descending$
    expressions.Divide expressions.EqualNullSafe expressions.EqualTo expressions.Exists
    expressions.GreaterThan expressions.GreaterThanOrEqual expressions.GroupingSets
    expressions.ILike expressions.In expressions.InSubquery expressions.IntegralDivide
    expressions.IsNotNull expressions.IsNotUnknown$$anon$2 expressions.IsNull
    expressions.IsUnknown$$anon$1 expressions.LambdaFunction expressions.LateralSubquery
    expressions.LessThan expressions.LessThanOrEqual expressions.Like expressions.LikeAll
    expressions.LikeAny expressions.ListQuery expressions.Literal expressions.Lower
    expressions.Multiply expressions.NamedArgumentExpression expressions.Not
    expressions.NotLikeAll expressions.NotLikeAny expressions.NullsFirst$
    expressions.NullsLast$ expressions.Or expressions.Overlay expressions.PipeExpression
    expressions.PipeOperator expressions.RLike expressions.RangeFrame$ expressions.Remainder
    expressions.Rollup expressions.RowFrame$ expressions.ScalarSubquery
    expressions.SemiStructuredExtract expressions.ShiftLeft expressions.ShiftRight
    expressions.ShiftRightUnsigned expressions.SortOrder expressions.SpecifiedWindowFrame
    expressions.StringLocate expressions.StringTrim expressions.StringTrimLeft
    expressions.StringTrimRight expressions.Substring expressions.Subtract
    expressions.TimestampAdd expressions.TimestampDiff expressions.UnaryMinus
    expressions.UnaryPositive expressions.UnboundedFollowing$
    expressions.UnboundedPreceding$ expressions.Unnest expressions.UnresolvedCollation
    expressions.UnresolvedNamedLambdaVariable expressions.UnresolvedWindowExpression
    expressions.UnspecifiedFrame$ expressions.WindowExpression
    expressions.WindowSpecDefinition expressions.WindowSpecReference
    expressions.aggregate.AggregateExpression expressions.aggregate.AnyValue
    expressions.aggregate.Complete$ expressions.aggregate.First expressions.aggregate.Last
    """.split()  # noqa: SIM905
)

#: fields Spark's JSON of a parsed tree writes as null although they may be set, each
#: reviewed to hold no tree (options, modes, data, escape characters, patterns as text);
#: any other null field refuses the statement, since it could hide a subquery or a call.
#: ``WithWindowDefinition`` (a named ``WINDOW w AS (…)``) keeps its windows in a map Spark
#: writes as null, so it is not admitted: windows are written inline, ``OVER (…)``
OPAQUE_FIELDS = frozenset(
    {
        ("analysis.UnresolvedRelation", "options"),
        ("expressions.Add", "evalContext"),
        ("expressions.Subtract", "evalContext"),
        ("expressions.Multiply", "evalContext"),
        ("expressions.Divide", "evalContext"),
        ("expressions.IntegralDivide", "evalContext"),
        ("expressions.Remainder", "evalContext"),
        ("expressions.Cast", "evalMode"),
        ("expressions.Cube", "groupingSetIndexes"),
        ("expressions.Rollup", "groupingSetIndexes"),
        ("expressions.GroupingSets", "groupingSetIndexes"),
        ("expressions.Like", "escapeChar"),
        ("expressions.ILike", "escapeChar"),
        ("expressions.LikeAny", "patterns"),
        ("expressions.LikeAll", "patterns"),
        ("expressions.NotLikeAny", "patterns"),
        ("expressions.NotLikeAll", "patterns"),
        ("expressions.Literal", "value"),
        ("expressions.UnresolvedWindowExpression", "windowSpec"),
        ("plans.logical.Join", "hint"),
        ("plans.logical.LocalRelation", "data"),
    }
)

#: table-valued functions (``SELECT * FROM range(10)``)
TABLE_FUNCTIONS = frozenset(
    """
    collations explode explode_outer inline inline_outer json_tuple posexplode
    posexplode_outer range sql_keywords stack variant_explode variant_explode_outer
    """.split()  # noqa: SIM905
)

_JAVA = "it calls a Java method by name, which runs any code in the server"
_DTD = "it fetches the external DTDs a document names, reaching other servers and files"
_FILE_PATH = "it reads a file of the server's disk named by an option"
_PATHS = "it shows the server's file paths"
_XSD = "its options read a file or a URL of the server's choosing (rowValidationXSDPath)"

#: Spark built-ins that are refused, and why (the error message says it)
DENIED_FUNCTIONS: dict[str, str] = {
    "reflect": _JAVA,
    "java_method": _JAVA,
    "try_reflect": _JAVA,
    **{
        f"xpath{s}": _DTD
        for s in ("", "_boolean", "_double", "_float", "_int", "_long", "_number", "_short")
    },
    "xpath_string": _DTD,
    "from_protobuf": _FILE_PATH,
    "to_protobuf": _FILE_PATH,
    "from_avro": _FILE_PATH,
    "to_avro": _FILE_PATH,
    "schema_of_avro": _FILE_PATH,
    "input_file_name": _PATHS,
    "input_file_block_start": _PATHS,
    "input_file_block_length": _PATHS,
    "python_worker_logs": "it reads the server's worker logs",
    # rowValidationXSDPath fetches a schema by path or URL, with its external DTDs
    "from_xml": _XSD,
    "schema_of_xml": _XSD,
}

#: Spark 4's built-in scalar, aggregate, window and generator functions admitted by name
FUNCTIONS = frozenset(
    """
    ! % & * + - / < << <= <=> = == > >= >> >>> ^ abs acos acosh add_months aes_decrypt
    aes_encrypt aggregate and any any_value approx_count_distinct approx_percentile
    approx_top_k approx_top_k_accumulate approx_top_k_combine approx_top_k_estimate array
    array_agg array_append array_compact array_contains array_distinct array_except
    array_insert array_intersect array_join array_max array_min array_position array_prepend
    array_remove array_repeat array_size array_sort array_union arrays_overlap arrays_zip
    ascii asin asinh assert_true atan atan2 atanh avg base64 between bigint bin binary
    bit_and bit_count bit_get bit_length bit_or bit_xor bitmap_and_agg bitmap_bit_position
    bitmap_bucket_number bitmap_construct_agg bitmap_count bitmap_or_agg bool_and bool_or
    boolean bround btrim cardinality cast cbrt ceil ceiling char char_length
    character_length chr coalesce collate collation collect_list collect_set collect_union
    concat concat_ws contains conv convert_timezone corr cos cosh cot count count_if
    count_min_sketch counter_diff covar_pop covar_samp crc32 csc cume_dist curdate
    current_catalog current_database current_date current_path current_schema current_time
    current_timestamp current_timezone current_user date date_add date_diff date_format
    date_from_unix_date date_part date_sub date_trunc dateadd datediff datepart day dayname
    dayofmonth dayofweek dayofyear decimal decode degrees dense_rank div double e element_at
    elt encode endswith equal_null every exists exp explode explode_outer expm1 extract
    factorial filter find_in_set first first_value flatten float floor forall format_number
    format_string from_base32 from_csv from_json from_unixtime from_utc_timestamp
    get get_json_object getbit greatest grouping grouping_id hash hex histogram_numeric
    hll_sketch_agg hll_sketch_estimate hll_union hll_union_agg hmac hour hypot if ifnull
    ilike in initcap inline inline_outer instr int is_valid_utf8 is_valid_variant
    is_variant_null isnan isnotnull isnull jaro_winkler_similarity json_array_length
    json_object_keys json_tuple kll_merge_agg_bigint kll_merge_agg_double
    kll_merge_agg_float kll_sketch_agg_bigint kll_sketch_agg_double kll_sketch_agg_float
    kll_sketch_get_n_bigint kll_sketch_get_n_double kll_sketch_get_n_float
    kll_sketch_get_quantile_bigint kll_sketch_get_quantile_double
    kll_sketch_get_quantile_float kll_sketch_get_rank_bigint kll_sketch_get_rank_double
    kll_sketch_get_rank_float kll_sketch_merge_bigint kll_sketch_merge_double
    kll_sketch_merge_float kll_sketch_to_string_bigint kll_sketch_to_string_double
    kll_sketch_to_string_float kurtosis lag last last_day last_value lcase lead least left
    len length levenshtein like listagg ln localtime localtimestamp locate log log10 log1p
    log2 lower lpad ltrim luhn_check make_date make_dt_interval make_interval make_time
    make_timestamp make_timestamp_ltz make_timestamp_ntz make_valid_utf8 make_ym_interval
    map map_concat map_contains_key map_entries map_filter map_from_arrays map_from_entries
    map_keys map_values map_zip_with mask max max_by md5 mean measure median min min_by
    minute mod mode monotonically_increasing_id month monthname months_between named_struct
    nanvl negative next_day not now nth_value ntile nullif nullifzero nvl nvl2 octet_length
    or overlay parse_json parse_url percent_rank percentile percentile_approx
    percentile_cont percentile_disc pi pmod posexplode posexplode_outer position positive
    pow power printf quarter quote radians raise_error rand randn random randstr rank reduce
    regexp regexp_count regexp_extract regexp_extract_all regexp_instr regexp_like
    regexp_replace regexp_substr regr_avgx regr_avgy regr_count regr_intercept regr_r2
    regr_slope regr_sxx regr_sxy regr_syy repeat replace reverse right rint rlike round
    row_number rpad rtrim schema_of_csv schema_of_json schema_of_variant
    schema_of_variant_agg sec second sentences sequence session_user
    session_window sha sha1 sha2 shiftleft shiftright shiftrightunsigned shuffle sign signum
    sin sinh size skewness slice smallint some sort_array soundex space spark_partition_id
    split split_part sqrt st_asbinary st_geogfromwkb st_geomfromwkb st_setsrid st_srid stack
    startswith std stddev stddev_pop stddev_samp str_to_map string string_agg struct substr
    substring substring_index sum tan tanh theta_difference theta_intersection
    theta_intersection_agg theta_sketch_agg theta_sketch_estimate theta_union
    theta_union_agg time time_bucket time_diff time_from_micros time_from_millis
    time_from_seconds time_to_micros time_to_millis time_to_seconds time_trunc timestamp
    timestamp_micros timestamp_millis timestamp_nanos timestamp_seconds tinyint to_base32
    to_binary to_char to_csv to_date to_json to_number to_time to_timestamp to_timestamp_ltz
    to_timestamp_ntz to_unix_timestamp to_utc_timestamp to_varchar to_variant_object to_xml
    transform transform_keys transform_values translate trim trunc try_add try_aes_decrypt
    try_avg try_divide try_element_at try_make_interval try_make_timestamp
    try_make_timestamp_ltz try_make_timestamp_ntz try_mod try_multiply try_parse_json
    try_parse_url try_subtract try_sum try_to_binary try_to_date try_to_number try_to_time
    try_to_timestamp try_url_decode try_validate_utf8 try_variant_array_append
    try_variant_get try_variant_insert try_variant_set tuple_difference_double
    tuple_difference_integer tuple_difference_theta_double tuple_difference_theta_integer
    tuple_intersection_agg_double tuple_intersection_agg_integer tuple_intersection_double
    tuple_intersection_integer tuple_intersection_theta_double
    tuple_intersection_theta_integer tuple_sketch_agg_double tuple_sketch_agg_integer
    tuple_sketch_estimate_double tuple_sketch_estimate_integer tuple_sketch_summary_double
    tuple_sketch_summary_integer tuple_sketch_theta_double tuple_sketch_theta_integer
    tuple_union_agg_double tuple_union_agg_integer tuple_union_double tuple_union_integer
    tuple_union_theta_double tuple_union_theta_integer typeof ucase unbase64 unhex uniform
    unix_date unix_micros unix_millis unix_nanos unix_seconds unix_timestamp upper
    url_decode url_encode user uuid validate_utf8 var_pop var_samp variance
    variant_array_append variant_delete variant_get variant_insert variant_set
    variant_strip_nulls vector_avg vector_cosine_similarity vector_inner_product
    vector_l2_distance vector_norm vector_normalize vector_sum version weekday weekofyear
    when width_bucket window window_time xxhash64 year zeroifnull zip_with | ~
    """.split()  # noqa: SIM905
)
