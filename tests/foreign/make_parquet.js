// Writes urls.parquet with the npm package @dsnp/parquetjs 1.8.8 (split-block Bloom filters on the
// "url" column, three row groups) and parquetjs_answers.json: for 100,000 values never written
// ("absent-0" ...), the indexes the package's own filter check (SplitBlockBloomFilter.check, through
// ParquetReader.getBloomFiltersFor) answers present, per row group. Run once from a directory where
// `npm install @dsnp/parquetjs@1.8.8` was done:  node make_parquet.js OUT_DIR
'use strict';
const parquet = require('@dsnp/parquetjs');
const fs = require('fs');
const path = require('path');
const out = process.argv[2];
(async () => {
  const schema = new parquet.ParquetSchema({ url: { type: 'UTF8' }, id: { type: 'INT64' } });
  const file = path.join(out, 'urls.parquet');
  const writer = await parquet.ParquetWriter.openFile(schema, file, {
    rowGroupSize: 1000, bloomFilters: [{ column: 'url', numFilterBytes: 1024 }],
  });
  for (let i = 0; i < 3000; i++) await writer.appendRow({ url: 'https://example.com/page/' + i, id: i });
  await writer.close();
  const reader = await parquet.ParquetReader.openFile(file);
  const filters = (await reader.getBloomFiltersFor(['url'])).url;
  const groups = [];
  for (const f of filters) {
    const present = [];
    for (let i = 0; i < 3000; i++)
      if (!(await f.sbbf.check('https://example.com/page/' + i)) && Math.floor(i / 1000) === f.rowGroupIndex)
        throw new Error('false negative ' + i);
    for (let i = 0; i < 100000; i++) if (await f.sbbf.check('absent-' + i)) present.push(i);
    groups.push({ row_group: f.rowGroupIndex, absent_present: present });
  }
  fs.writeFileSync(path.join(out, 'parquetjs_answers.json'),
                   JSON.stringify({ made_by: '@dsnp/parquetjs 1.8.8', column: 'url', rows: 3000,
                                    written: 'https://example.com/page/<i> for i < 3000, 1000 per row group',
                                    absent: 'absent-<i> for i < 100000', row_groups: groups }));
  await reader.close();
})();
