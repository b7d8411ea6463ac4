"""The functions a query may call: an allow list per dialect, never a list of the bad ones.

A function that takes SQL text as a string runs it inside the server, beyond the statement
check (PostgreSQL's ``ts_stat('...')`` or ``query_to_xml('...')``, DuckDB's ``query('...')``,
BigQuery's ``EXTERNAL_QUERY``); others wait, read files, signal other sessions or take
locks that outlive the transaction. New ones appear with every release, so the statement
check (``agent_core.database.statements``) admits only functions known to compute a value
from their arguments: aggregates, window functions, arithmetic, text, dates, JSON, arrays.
A function called by name is checked by the name it was written with, lower case; SQL
syntax that sqlglot turns into a function node (``CAST``, ``EXTRACT``, ``->``, ``AND``) is
checked by sqlglot's name for it (``SYNTAX``).

Operators add functions of their own with ``[database] allowed_functions`` (a user-defined
``reporting.fiscal_quarter``, say): only they know which of theirs are safe.

>>> "ts_stat" in allowed_functions("postgres"), "upper" in allowed_functions("postgres")
(False, True)
>>> "reporting.fiscal_quarter" in allowed_functions("postgres", ["Reporting.Fiscal_Quarter"])
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlglot import exp


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


COMMON = _names(
    """
    abs avg ceil ceiling coalesce concat count cume_dist dense_rank exp first_value floor
    greatest lag last_value lead least length ln log lower ltrim max min mod nth_value ntile
    nullif percent_rank power rank replace reverse round row_number rtrim sign sqrt stddev
    stddev_pop stddev_samp substr substring sum trim upper var_pop var_samp variance
    """
)
"""Standard SQL every dialect shares."""

POSTGRES = COMMON | _names(
    """
    acos acosd acosh age any_value array_agg array_append array_cat array_dims array_fill
    array_length array_lower array_ndims array_position array_positions array_prepend
    array_remove array_replace array_to_json array_to_string array_to_tsvector array_upper
    ascii asin asind asinh atan atan2 atan2d atand atanh bit_and bit_count bit_length bit_or
    bit_xor bool_and bool_or btrim cardinality cbrt char_length character_length chr
    clock_timestamp col_description concat_ws convert convert_from convert_to corr cos cosd
    cosh cot cotd covar_pop covar_samp current_date current_schemas date date_add date_bin
    date_part date_subtract date_trunc daterange decode degrees div encode enum_first
    enum_last enum_range erf erfc every extract factorial float4 float8 format format_type
    gcd gen_random_uuid generate_series generate_subscripts get_bit get_byte
    has_any_column_privilege has_column_privilege has_schema_privilege has_table_privilege
    initcap int2 int4 int4range int8 int8range interval isempty isfinite json_agg
    json_array_elements json_array_elements_text json_array_length json_build_array
    json_build_object json_each json_each_text json_extract_path json_extract_path_text
    json_object json_object_agg json_object_keys json_populate_record
    json_populate_recordset json_strip_nulls json_to_record json_to_recordset json_typeof
    jsonb_agg jsonb_array_elements jsonb_array_elements_text jsonb_array_length
    jsonb_build_array jsonb_build_object jsonb_each jsonb_each_text jsonb_extract_path
    jsonb_extract_path_text jsonb_insert jsonb_object jsonb_object_agg jsonb_object_keys
    jsonb_path_exists jsonb_path_match jsonb_path_query jsonb_path_query_array
    jsonb_path_query_first jsonb_populate_record jsonb_populate_recordset jsonb_pretty
    jsonb_set jsonb_strip_nulls jsonb_to_record jsonb_to_recordset jsonb_typeof
    justify_days justify_hours justify_interval lcm left localtime localtimestamp log10
    lower_inc lower_inf lpad make_date make_interval make_time make_timestamp
    make_timestamptz md5 min_scale mode now num_nonnulls num_nulls numeric numrange
    obj_description octet_length overlay pg_column_size pg_get_viewdef pg_indexes_size
    pg_relation_size pg_size_bytes pg_size_pretty pg_table_is_visible pg_table_size
    pg_total_relation_size pg_typeof phraseto_tsquery pi plainto_tsquery position pow
    percentile_cont percentile_disc quote_ident quote_literal quote_nullable radians random
    range_agg range_merge regexp_count regexp_instr regexp_like regexp_match regexp_matches
    regexp_replace regexp_split_to_array regexp_split_to_table regexp_substr regr_avgx
    regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy
    repeat right row row_to_json rpad scale setweight sha224 sha256 sha384 sha512 sin sind
    sinh split_part starts_with statement_timestamp string_agg string_to_array
    string_to_table strip strpos tan tand tanh text time timeofday timestamp timestamptz
    to_ascii to_char to_date to_hex to_json to_jsonb to_number to_regclass to_regtype
    to_timestamp to_tsquery to_tsvector transaction_timestamp translate trim_array
    trim_scale trunc ts_headline ts_rank ts_rank_cd tsrange tstzrange tsvector_to_array
    unistr unnest upper_inc upper_inf websearch_to_tsquery width_bucket xmlagg xmlcomment
    xmlconcat xmlelement xmlexists xmlforest xpath xpath_exists
    """
)
"""Without: anything taking SQL as text (``ts_stat``, ``ts_rewrite``, ``query_to_xml``,
``dblink``), files (``pg_read_file``, ``lo_*``), other sessions (``pg_terminate_backend``),
locks (``pg_advisory_*``), settings (``set_config``, ``current_setting``), sequences
(``nextval``), waits (``pg_sleep``), notifications and replication."""

MYSQL = COMMON | _names(
    """
    adddate addtime any_value ascii bin bit_and bit_count bit_length bit_or bit_xor
    char_length character_length concat_ws conv convert_tz cos cot crc32 curdate
    current_date current_time current_timestamp curtime date date_add date_format date_sub
    datediff day dayname dayofmonth dayofweek dayofyear degrees elt extract field
    find_in_set format from_days from_unixtime get_format group_concat hex hour if ifnull
    insert instr json_array json_arrayagg json_contains json_contains_path json_depth
    json_extract json_keys json_length json_object json_objectagg json_overlaps json_quote
    json_search json_type json_unquote json_valid json_value last_day lcase left locate
    log10 log2 lpad makedate maketime md5 microsecond mid minute month monthname now oct
    ord period_add period_diff pi position pow quarter radians rand regexp_instr
    regexp_like regexp_replace regexp_substr repeat right rpad sec_to_time second sha1 sha2
    sin soundex space std str_to_date strcmp subdate substring_index subtime sysdate tan
    time time_format time_to_sec timediff timestamp timestampadd timestampdiff to_days
    to_seconds truncate ucase unhex unix_timestamp utc_date utc_time utc_timestamp uuid
    week weekday weekofyear year yearweek
    """
)
"""Without: ``sleep``, ``benchmark``, ``load_file``, locks (``get_lock``), user functions."""

SQLITE = COMMON | _names(
    """
    acos acosh asin asinh atan atan2 atanh char concat_ws cos cosh date datetime degrees
    format glob group_concat hex iif ifnull instr json json_array json_array_length
    json_each json_extract json_group_array json_group_object json_insert json_object
    json_patch json_quote json_remove json_replace json_set json_tree json_type json_valid
    jsonb jsonb_array jsonb_extract jsonb_group_array jsonb_group_object jsonb_object
    julianday like likelihood likely log10 log2 octet_length pi pow pragma_foreign_key_list
    pragma_index_info pragma_index_list pragma_index_xinfo pragma_table_info
    pragma_table_xinfo printf quote radians
    random randomblob sin sinh soundex sqlite_version strftime string_agg tan tanh time
    timediff total trunc typeof unhex unicode unixepoch unlikely zeroblob
    """
)
"""Without: ``load_extension``, ``readfile`` / ``writefile`` / ``edit``, ``fts3_tokenizer``.
Lengths are bounded by the connection's limits (``agent_core.database.sqlite_guard``)."""

SQLITE_OPERATORS = _names("like glob regexp match -> ->>")
"""What SQLite's authorizer also sees as functions: its operators."""

DUCKDB = COMMON | _names(
    """
    acos add any_value approx_count_distinct approx_quantile arg_max arg_min array_agg
    array_contains array_distinct array_extract array_filter array_has array_length
    array_position array_slice array_sort array_to_string array_transform ascii asin atan
    atan2 avg bar bit_and bit_count bit_length bit_or bit_xor bool_and bool_or cardinality
    cbrt century chr concat_ws contains corr cos cot covar_pop covar_samp current_date
    date_add date_diff date_part date_sub date_trunc datediff datepart datesub datetrunc
    day dayname dayofmonth dayofweek dayofyear decade degrees divide ends_with entropy
    epoch epoch_ms epoch_us even factorial favg first flatten format fsum gamma gcd
    gen_random_uuid generate_series greatest_common_divisor hamming hash histogram hour
    ilike_escape instr isfinite isinf isnan isodow isoyear jaccard jaro_similarity
    jaro_winkler_similarity json_array json_array_length json_contains json_extract
    json_extract_path json_extract_path_text json_extract_string json_group_array
    json_group_object json_keys json_object json_quote json_structure json_transform
    json_type json_valid json_value kurtosis last last_day lcase lcm left left_grapheme
    levenshtein lgamma like_escape list list_aggregate list_append list_concat
    list_contains list_distinct list_extract list_filter list_has list_position list_reduce
    list_reverse list_slice list_sort list_transform list_unique list_value log10 log2
    lpad make_date make_time make_timestamp map map_extract map_keys map_values mad max_by
    md5 median microsecond millennium millisecond min_by minute mode month monthname
    multiply nextafter not_ilike_escape not_like_escape now ord percentile_cont
    percentile_disc pi position pow prefix
    product quantile quantile_cont quantile_disc quarter radians random range
    regexp_extract regexp_extract_all regexp_full_match regexp_matches regexp_replace
    regexp_split_to_array regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope
    regr_sxx regr_sxy regr_syy repeat right rpad second sem sha1 sha256 sin skewness
    split_part starts_with str_split strftime string_agg string_split string_to_array
    strip_accents strlen strpos strptime struct_extract struct_pack subtract suffix tan
    time_bucket to_json to_timestamp today translate trunc try_strptime typeof ucase
    unicode unnest uuid week weekday weekofyear xor year yearweek
    """
)
"""Without: file and network readers (``read_csv``, ``glob``, ``*_scan``), ``query`` and
``query_table`` (SQL as text), catalog functions that show server paths
(``duckdb_databases``, ``duckdb_settings``, ``pragma_*``), ``current_setting``."""

TSQL = COMMON | _names(
    """
    approx_count_distinct ascii char charindex checksum choose concat_ws count_big
    datalength date_bucket dateadd datediff datediff_big datefromparts datename datepart
    datetime2fromparts datetimefromparts datetrunc day difference eomonth format getdate
    getutcdate iif isjson isnull isnumeric json_query json_value left len log10 month nchar
    newid patindex percentile_cont percentile_disc pi quotename radians rand replicate right
    soundex space square stdev stdevp str string_agg string_split stuff switchoffset
    sysdatetime sysdatetimeoffset sysutcdatetime timefromparts todatetimeoffset translate
    try_cast try_convert unicode var varp year
    """
)
"""Without: ``OPENROWSET``, ``OPENQUERY``, ``OPENDATASOURCE``, ``OPENXML``, ``sys.fn_*``."""

SNOWFLAKE = COMMON | _names(
    """
    add_months any_value approx_count_distinct approx_percentile array_agg array_append
    array_cat array_compact array_construct array_contains array_distinct array_flatten
    array_intersection array_position array_size array_slice array_to_string arrayagg
    ascii base64_decode_string base64_encode bitand bitor bitxor booland_agg boolor_agg
    charindex concat_ws contains convert_timezone corr count_if covar_pop covar_samp
    current_date current_time current_timestamp date_from_parts date_part date_trunc
    dateadd datediff day dayname dayofmonth dayofweek dayofyear decode div0 div0null
    editdistance endswith equal_null flatten get get_path greatest_ignore_nulls hash hour
    iff ifnull ilike initcap insert is_null_value kurtosis last_day least_ignore_nulls
    left listagg lpad md5 median minute mode month monthname months_between
    next_day nullifzero nvl nvl2 object_agg object_construct object_insert object_keys
    parse_json percentile_cont percentile_disc position previous_day quarter
    ratio_to_report regexp_count regexp_instr regexp_like regexp_replace regexp_substr
    repeat right rpad second sha1 sha2 skew split split_part split_to_table square
    startswith strtok strtok_to_array sysdate time_from_parts time_slice
    timeadd timediff timestamp_from_parts timestampadd timestampdiff to_array to_boolean
    to_char to_date to_decimal to_double to_number to_numeric to_time to_timestamp
    to_timestamp_ltz to_timestamp_ntz to_timestamp_tz to_varchar to_variant translate
    trunc truncate try_cast try_parse_json try_to_date try_to_decimal try_to_number
    try_to_timestamp typeof uuid_string week weekiso year yearofweek zeroifnull
    """
)
"""Without: ``SYSTEM$*``, ``RESULT_SCAN`` / ``LAST_QUERY_ID`` (another question's results
on a shared session), ``IDENTIFIER``, external functions and stages."""

BIGQUERY = COMMON | _names(
    """
    any_value approx_count_distinct approx_quantiles approx_top_count array array_agg
    array_concat array_concat_agg array_length array_reverse array_to_string
    bit_count byte_length char_length concat countif current_date current_datetime
    current_time current_timestamp date date_add date_diff date_sub date_trunc datetime
    datetime_add datetime_diff datetime_sub datetime_trunc div ends_with extract
    farm_fingerprint format format_date format_datetime format_time format_timestamp
    generate_array generate_date_array generate_timestamp_array ieee_divide if ifnull
    initcap instr json_extract json_extract_array json_extract_scalar json_query
    json_query_array json_value json_value_array last_day left logical_and logical_or
    lpad md5 normalize offset ordinal parse_date parse_datetime parse_json parse_time
    parse_timestamp percentile_cont percentile_disc regexp_contains regexp_extract
    regexp_extract_all regexp_instr regexp_replace repeat right rpad safe_add safe_cast
    safe_divide safe_multiply safe_negate safe_offset safe_ordinal safe_subtract sha1
    sha256 sha512 split starts_with string_agg strpos struct time time_add time_diff
    time_sub time_trunc timestamp timestamp_add timestamp_diff timestamp_micros
    timestamp_millis timestamp_seconds timestamp_sub timestamp_trunc to_json
    to_json_string unix_date unix_micros unix_millis unix_seconds unnest
    """
)
"""Without: ``EXTERNAL_QUERY`` (SQL on another server), ``ML.*`` / ``AI.*`` (models that
cost money), ``VECTOR_SEARCH``, ``APPENDS`` / ``CHANGES``."""

_BY_DIALECT: dict[str | None, frozenset[str]] = {
    "postgres": POSTGRES,
    "mysql": MYSQL,
    "sqlite": SQLITE,
    "duckdb": DUCKDB,
    "tsql": TSQL,
    "snowflake": SNOWFLAKE,
    "bigquery": BIGQUERY,
}

SYSTEM_SCHEMAS: dict[str | None, frozenset[str]] = {"postgres": frozenset({"pg_catalog"})}
"""Where a dialect's own functions live when a query names the schema."""

SYNTAX = _names(
    """
    AND ANY ALL APPROX_QUANTILE ARG_MAX ARG_MIN ARRAY ARRAY_CONTAINED_BY ARRAY_CONTAINS
    ARRAY_CONTAINS_ALL ARRAY_OVERLAPS CASE CAST CEIL CHR COLLATE CONVERT CORR
    CURRENT_CATALOG CURRENT_DATE CURRENT_DATETIME CURRENT_ROLE CURRENT_SCHEMA CURRENT_TIME
    CURRENT_TIMESTAMP CURRENT_USER DATE_PART DECODE EXISTS EXTRACT FLOOR GROUP_CONCAT IF
    INITCAP J_S_O_N_ARRAY J_S_O_N_ARRAY_AGG J_S_O_N_OBJECT J_S_O_N_OBJECT_AGG J_S_O_N_TABLE
    JSONB_CONTAINS JSONB_CONTAINS_ALL_TOP_KEYS JSONB_CONTAINS_ANY_TOP_KEYS
    JSONB_CONTAINS_TOP_KEY JSONB_EXISTS JSONB_EXTRACT JSONB_EXTRACT_SCALAR JSON_ARRAY
    JSON_ARRAY_AGG JSON_EXTRACT JSON_EXTRACT_SCALAR JSON_OBJECT JSON_OBJECT_AGG JSON_VALUE
    LOCALTIME LOCALTIMESTAMP MAKE_INTERVAL MATCH_AGAINST MAX MAX_BY MIN MIN_BY NORMALIZE
    OPEN_J_S_O_N OR OVERLAY PERCENTILE_CONT PERCENTILE_DISC POW QUANTILE QUANTILE_CONT
    QUANTILE_DISC REGEXP_FULL_MATCH REGEXP_I_LIKE REGEXP_LIKE SAFE_CAST SESSION_USER
    STR_POSITION STRUCT SUBSTRING TRANSLATE TRIM TRY_CAST TRY_CONVERT TS_OR_DS_TO_DATE
    TS_OR_DS_TO_TIMESTAMP UNNEST WEIGHT_STRING XMLELEMENT XMLTABLE XOR
    """
)
"""sqlglot's names of the function nodes SQL syntax makes (operators such as ``->`` and
``@>``, special forms such as ``CAST(x AS t)`` and ``EXTRACT(y FROM d)``): what a node
without a written name may be. Not BigQuery's ``PREDICT`` / ``GENERATE_*`` / ``FORECAST``
(models that cost money) nor Snowflake's ``DIRECTORY`` (a stage's files)."""


def allowed_functions(dialect: str | None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The functions a query in ``dialect`` (sqlglot's name) may call, lower case, plus the
    operator's ``extra`` ones (qualified names such as ``reporting.fiscal_quarter`` allowed);
    an unknown dialect gets standard SQL only."""
    return _BY_DIALECT.get(dialect, COMMON) | {name.lower() for name in extra}


def system_schemas(dialect: str | None) -> frozenset[str]:
    """The schemas a dialect's built-in functions may be qualified with (``pg_catalog``)."""
    return SYSTEM_SCHEMAS.get(dialect, frozenset())


@dataclass(frozen=True)
class FunctionPolicy:
    """What one runner's queries may call: ``allowed`` names (lower case; qualified ones
    such as ``reporting.fiscal_quarter`` too) and the schemas built-ins may be named with.

    >>> FunctionPolicy.for_dialect("postgres").admits("pg_catalog", "lower")
    True
    """

    dialect: str | None
    allowed: frozenset[str]
    schemas: frozenset[str] = frozenset()

    @classmethod
    def for_dialect(cls, dialect: str | None, extra: Iterable[str] = ()) -> FunctionPolicy:
        return cls(dialect, allowed_functions(dialect, extra), system_schemas(dialect))

    def admits(self, schema: str | None, name: str) -> bool:
        if schema is not None and f"{schema}.{name}" in self.allowed:
            return True
        return (schema is None or schema in self.schemas) and name in self.allowed


def called_name(node: exp.Func, sql: str) -> tuple[str, bool]:
    """The name a function was called by, lower case, as written in ``sql`` (``pg_sleep``,
    ``read_csv``), and True; for a node SQL syntax made (``CAST(x AS t)``, ``->``),
    sqlglot's name for it and False."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), True
    start, end = node.meta.get("start"), node.meta.get("end")
    if isinstance(start, int) and isinstance(end, int):
        return sql[start : end + 1].strip('"`[]').lower(), True
    return node.sql_name(), False


def _qualifier(node: exp.Func) -> str | None:
    """``pg_catalog`` of ``pg_catalog.upper(x)``; None when the call names no schema."""
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        parts = parent.this.find_all(exp.Identifier, exp.Var)
        return ".".join(part.name for part in parts).lower() or parent.this.sql().lower()
    return None


def refused_function(statement: exp.Expr, sql: str, policy: FunctionPolicy) -> str | None:
    """The first function ``statement`` (parsed from ``sql``) calls that ``policy`` does not
    admit, as it was called (``pg_catalog.pg_read_file``); None when all are admitted."""
    for node in statement.find_all(exp.Func):
        name, written = called_name(node, sql)
        if not written:
            if name not in SYNTAX:
                return name.lower()
            continue
        schema = _qualifier(node)
        if not policy.admits(schema, name):
            return f"{schema}.{name}" if schema else name
    return None
