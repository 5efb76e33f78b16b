// Writes data.parquet with DuckDB (npm @duckdb/node-api 1.5.6-r.1, DuckDB 1.5.6), whose Parquet writer
// puts a split-block Bloom filter on every dictionary-encoded column chunk, and duckdb_answers.json:
// for values never written, the row groups whose filter DuckDB's own check (parquet_bloom_probe) does
// not exclude. Run once where `npm install @duckdb/node-api@1.5.6-r.1` was done:
//     node make_parquet.mjs OUT_DIR
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'fs';
import path from 'path';
const out = process.argv[2];
const file = path.join(out, 'data.parquet');
const con = await (await DuckDBInstance.create(':memory:')).connect();
// 40,000 rows in two row groups; few distinct values per column, so each is dictionary-encoded and
// gets a filter, except "uniq" (all distinct: plain encoding, no filter)
await con.run(`copy (select 'https://example.com/page/' || (i % 1000) as url, (i % 700)::bigint as id,
  (i % 900)::integer as n32, ((i % 800) * 0.5)::double as d, ((i % 600) * 0.25)::float as f,
  unhex(md5((i % 500)::varchar)) as b, ('00000000-0000-4000-8000-' || lpad((i % 400)::varchar, 12, '0'))::uuid as u,
  'row-' || i as uniq from range(40000) t(i)) to '${file}' (format parquet, row_group_size 20000)`);
// absent values: SQL literal of value j, and how the test writes it as a key
const absent = {
  url: [100000, (j) => `'https://example.com/absent/${j}'`],
  id: [10000, (j) => `${1000000 + j}::bigint`],
  n32: [10000, (j) => `${-1000 - j}::integer`],
  d: [10000, (j) => `${1000000 + j * 0.5}::double`],
  f: [10000, (j) => `${100000 + j * 0.25}::float`],
  b: [10000, (j) => `unhex(md5('absent-${j}'))`],
  u: [2000, (j) => `'00000000-0000-4000-8000-${String(500000 + j).padStart(12, '0')}'::uuid`],
};
const columns = {};
for (const [col, [n, lit]] of Object.entries(absent)) {
  const groups = [[], []];
  for (let j = 0; j < n; j++) {
    const r = await con.runAndReadAll(`select row_group_id, bloom_filter_excludes from parquet_bloom_probe('${file}', '${col}', ${lit(j)})`);
    for (const [g, ex] of r.getRows()) if (!ex) groups[Number(g)].push(j);
  }
  columns[col] = { absent_values: n, not_excluded: groups };
}
fs.writeFileSync(path.join(out, 'duckdb_answers.json'), JSON.stringify({
  made_by: 'DuckDB 1.5.6 (npm @duckdb/node-api 1.5.6-r.1)', rows: 40000, row_groups: 2,
  written: {
    url: "'https://example.com/page/' || (i % 1000)", id: 'i % 700 (int64)', n32: 'i % 900 (int32)',
    d: '(i % 800) * 0.5 (double)', f: '(i % 600) * 0.25 (float)', b: 'the 16 bytes of md5 of the decimal text of i % 500',
    u: "uuid '00000000-0000-4000-8000-' || 12-digit i % 400 (fixed_len_byte_array(16))", uniq: "'row-' || i (no filter)",
  },
  absent: {
    url: "'https://example.com/absent/' || j", id: '1000000 + j', n32: '-1000 - j', d: '1000000 + j * 0.5',
    f: '100000 + j * 0.25', b: "md5 bytes of 'absent-' || j", u: "uuid '00000000-0000-4000-8000-' || 12-digit 500000 + j",
  },
  columns,
}));
