// Writes bip37_bloom_filter.json: BIP 37 filters made by the npm package bloom-filter (bitpay), an
// implementation independent of bloomkit, over random byte keys. Run once from a directory where
// `npm install bloom-filter@0.2.0` was done:  node make_bip37.js > bip37_bloom_filter.json
'use strict';
var Filter = require('bloom-filter');
var state = 0x2545f491;
function rnd() { // xorshift32: a fixed, reproducible stream
  state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0;
  return state;
}
function key() {
  var len = rnd() % 41, b = Buffer.alloc(len);
  for (var i = 0; i < len; i++) b[i] = rnd() & 0xff;
  return b;
}
function compactSize(n) {
  return n < 0xfd ? Buffer.from([n]) : Buffer.from([0xfd, n & 0xff, n >> 8]);
}
var shapes = [[1, 1, 0, 0], [3, 5, 0, 1], [3, 5, 2147483649, 1], [17, 7, 12345, 2], [250, 11, 0xffffffff, 0],
              [253, 3, 99, 1], [1000, 10, 0xdeadbeef, 0], [36000, 50, 7, 1]];
var cases = shapes.map(function (s) {
  var f = new Filter({ vData: new Array(s[0]).fill(0), nHashFuncs: s[1], nTweak: s[2], nFlags: s[3] });
  var n = Math.min(3000, Math.max(1, Math.floor(s[0] * 8 / 12))), added = [], absent = [];
  for (var i = 0; i < n; i++) { var k = key(); f.insert(k); added.push(k.toString('hex')); }
  for (i = 0; i < 200; i++) { k = key(); absent.push([k.toString('hex'), f.contains(k)]); }
  var tail = Buffer.alloc(9);
  tail.writeUInt32LE(f.nHashFuncs, 0); tail.writeUInt32LE(f.nTweak >>> 0, 4); tail[8] = f.nFlags;
  var wire = Buffer.concat([compactSize(f.vData.length), Buffer.from(f.vData), tail]);
  return { bytes: s[0], hash_funcs: s[1], tweak: s[2], flags: s[3], added: added, queried: absent,
           serialized: wire.toString('hex') };
});
console.log(JSON.stringify({ made_by: 'bloom-filter 0.2.0 (npm)', cases: cases }));
