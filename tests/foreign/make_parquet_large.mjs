// Writes large-filters.parquet with DuckDB (npm @duckdb/node-api 1.5.6-r.1, DuckDB 1.5.6): one row
// group of 60,000 rows, columns k (INT64, i % 10000) and s (BYTE_ARRAY, 'key-' || i % 6000), each
// dictionary-encoded, so DuckDB writes a filter of 512 and 256 blocks (headers whose numBytes takes
// three bytes). Run once where `npm install @duckdb/node-api@1.5.6-r.1` was done:
//     node make_parquet_large.mjs OUT_DIR
import { DuckDBInstance } from '@duckdb/node-api';
import path from 'path';
const file = path.join(process.argv[2], 'large-filters.parquet');
const con = await (await DuckDBInstance.create(':memory:')).connect();
await con.run(`copy (select (i % 10000)::bigint as k, 'key-' || (i % 6000) as s from range(60000) t(i))
  to '${file}' (format parquet, row_group_size 60000)`);
