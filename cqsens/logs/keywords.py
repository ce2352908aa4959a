"""Words that are never taken for a table alias in a query log's cache key.

A table alias is abstracted in the cache key (:mod:`cqsens.logs.aliases`) only
when it is a plain lower-case identifier that no SQL dialect cqsens reads
(sqlglot's tokenizers) and SQLite treat as a keyword, so that a record with
another alias in the same places is tokenised, parsed and resolved alike.
``tests/test_log_aliases.py`` checks that this list holds every keyword of
every sqlglot dialect's tokenizer (it is written out here so that a cache hit
imports no dialect).
"""

from __future__ import annotations

__all__ = ["KEYWORDS"]

KEYWORDS = frozenset({
    '_armscii8', '_ascii', '_big5', '_binary', '_cp1250', '_cp1251', '_cp1256', '_cp1257',
    '_cp850', '_cp852', '_cp866', '_cp932', '_dec8', '_eucjpms', '_euckr', '_gb18030', '_gb2312',
    '_gbk', '_geostd8', '_greek', '_hebrew', '_hp8', '_keybcs2', '_koi8r', '_koi8u', '_latin1',
    '_latin2', '_latin5', '_latin7', '_macce', '_macroman', '_sjis', '_swe7', '_tis620', '_ucs2',
    '_ujis', '_utf16', '_utf16le', '_utf32', '_utf8', '_utf8mb3', '_utf8mb4', 'abort', 'action',
    'add', 'admin', 'after', 'aggregatefunction', 'all', 'alter', 'always', 'analyze', 'and',
    'anti', 'any', 'apply', 'array', 'as', 'asc', 'asof', 'at', 'attach', 'auto_increment',
    'autoincrement', 'backup', 'before', 'begin', 'between', 'bigdecimal', 'bigint', 'bignum',
    'bignumeric', 'bigserial', 'binary', 'binary_double', 'binary_float', 'bit', 'bitstring',
    'blob', 'bool', 'boolean', 'bpchar', 'bson', 'by', 'byte', 'bytea', 'byteint', 'bytes',
    'cache', 'call', 'cancel', 'cascade', 'case', 'cast', 'char', 'character', 'charset', 'check',
    'clob', 'collate', 'collect', 'column', 'columns', 'comment', 'commit', 'conflict', 'connect',
    'constraint', 'copy', 'create', 'cross', 'cstring', 'cube', 'current', 'current_catalog',
    'current_date', 'current_datetime', 'current_schema', 'current_time', 'current_timestamp',
    'current_user', 'current_user_id', 'database', 'date', 'date32', 'datemultirange',
    'daterange', 'datetime', 'datetime2', 'datetime64', 'datetimeoffset', 'deallocate', 'dec',
    'decfloat', 'decimal', 'decimal128', 'decimal256', 'decimal32', 'decimal64', 'declare',
    'default', 'deferrable', 'deferred', 'del', 'delete', 'desc', 'describe', 'detach',
    'dictionary', 'disconnect', 'distinct', 'distinctrow', 'div', 'do', 'double', 'drop',
    'dynamic', 'each', 'else', 'elseif', 'end', 'endif', 'enum', 'enum16', 'enum8', 'eq',
    'escape', 'except', 'exception', 'exchange', 'exclude', 'exclusive', 'exec', 'execute',
    'exists', 'explain', 'export', 'fail', 'false', 'fetch', 'file', 'filter', 'final', 'first',
    'fixed', 'fixedstring', 'float', 'float32', 'float4', 'float64', 'float8', 'following', 'for',
    'force', 'foreign', 'format', 'from', 'full', 'function', 'ge', 'generated', 'geography',
    'geographypoint', 'geometry', 'get', 'glob', 'global', 'go', 'grant', 'group', 'groups', 'gt',
    'having', 'help', 'hll', 'hllsketch', 'hstore', 'hugeint', 'hyperloglog', 'if', 'ignore',
    'ilike', 'image', 'immediate', 'in', 'index', 'indexed', 'inet', 'initially', 'inner',
    'inout', 'ins', 'insert', 'install', 'instead', 'int', 'int1', 'int128', 'int16', 'int2',
    'int256', 'int32', 'int4', 'int4multirange', 'int4range', 'int64', 'int8', 'int8multirange',
    'int8range', 'integer', 'integration', 'intersect', 'interval', 'into', 'ipaddress',
    'ipprefix', 'ipv4', 'ipv6', 'is', 'isnull', 'join', 'json', 'jsonb', 'keep', 'key', 'kill',
    'largeint', 'last', 'lateral', 'le', 'left', 'level', 'like', 'limit', 'linestring', 'list',
    'load', 'localtime', 'localtimestamp', 'lock', 'locking', 'logical', 'long', 'longblob',
    'longtext', 'longvarchar', 'loop', 'lowcardinality', 'ls', 'lt', 'macro', 'map', 'match',
    'match_condition', 'match_recognize', 'materialized', 'mediumblob', 'mediumint', 'mediumtext',
    'merge', 'minus', 'mod', 'model', 'money', 'multilinestring', 'multipolygon', 'name',
    'namespace', 'natural', 'nchar', 'ne', 'nested', 'next', 'no', 'not', 'nothing', 'notnull',
    'ntext', 'null', 'nullable', 'nulls', 'number', 'numeric', 'nummultirange', 'numrange',
    'nvarchar', 'nvarchar2', 'object', 'of', 'offset', 'oid', 'on', 'only', 'operator',
    'optimize', 'option', 'or', 'order', 'ordinality', 'others', 'out', 'outer', 'output', 'over',
    'overlaps', 'overwrite', 'package', 'partition', 'partitioned_by', 'paste', 'pause',
    'percent', 'pivot', 'pivot_wider', 'plan', 'point', 'policy', 'polygon', 'pool', 'positional',
    'pragma', 'preceding', 'prepare', 'prewhere', 'primary', 'print', 'prior', 'proc',
    'procedure', 'projection', 'put', 'qualify', 'query', 'raise', 'range', 'real', 'record',
    'recover', 'recursive', 'ref', 'references', 'refresh', 'regclass', 'regcollation',
    'regconfig', 'regdictionary', 'regexp', 'regexp_like', 'regnamespace', 'regoper',
    'regoperator', 'regproc', 'regprocedure', 'regrole', 'regtype', 'reindex', 'release',
    'remove', 'rename', 'repeat', 'replace', 'reset', 'restore', 'restrict', 'resume',
    'returning', 'revoke', 'right', 'ring', 'rlike', 'rm', 'role', 'rollback', 'rollup', 'row',
    'rownum', 'rows', 'rowversion', 'rule', 'sample', 'savepoint', 'schema', 'sel', 'select',
    'semi', 'separator', 'sequence', 'serdeproperties', 'serial', 'session', 'session_user',
    'set', 'settings', 'short', 'show', 'signed', 'simpleaggregatefunction', 'sink',
    'smalldatetime', 'smallint', 'smallmoney', 'smallserial', 'some', 'source', 'sql_double',
    'sql_varchar', 'sql_variant', 'st_geometry', 'stage', 'start', 'stop', 'str', 'straight_join',
    'stream', 'streamlit', 'string', 'struct', 'submit', 'subpartition', 'summarize', 'super',
    'sysdate', 'system', 'system_time', 'system_user', 'systimestamp', 'table', 'tablesample',
    'tag', 'tdigest', 'temp', 'temporary', 'text', 'then', 'ties', 'time', 'time_ns', 'timestamp',
    'timestamp_ltz', 'timestamp_ms', 'timestamp_ns', 'timestamp_ntz', 'timestamp_s',
    'timestamp_tz', 'timestamp_us', 'timestampltz', 'timestampntz', 'timestamptz', 'timetz',
    'tinyblob', 'tinyint', 'tinytext', 'to', 'top', 'transaction', 'trigger', 'true', 'truncate',
    'tsmultirange', 'tsrange', 'tstzmultirange', 'tstzrange', 'tuple', 'type', 'ubigint',
    'uhugeint', 'uint', 'uint128', 'uint16', 'uint256', 'uint32', 'uint64', 'uint8', 'uinteger',
    'unbounded', 'uncache', 'undrop', 'uninstall', 'union', 'unique', 'uniqueidentifier',
    'unknown', 'unload', 'unnest', 'unpivot', 'unsigned', 'upd', 'update', 'use', 'user', 'using',
    'usmallint', 'utc_date', 'utc_time', 'utc_timestamp', 'utinyint', 'uuid', 'vacuum', 'values',
    'varbinary', 'varbyte', 'varchar', 'varchar2', 'variadic', 'variant', 'vector', 'view',
    'virtual', 'void', 'volatile', 'volume', 'warehouse', 'when', 'where', 'while', 'window',
    'with', 'without', 'xml', 'xor', 'year', 'zone',
})
