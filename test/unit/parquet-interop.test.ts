/**
 * pyarrow as an oracle, both ways: pyarrow reads floe's Parquet (field ids, types, values) and
 * floe reads pyarrow's (then conforms it to an Iceberg schema, as compaction does). Skipped when
 * no Python with pyarrow is around: FLOE_PYTHON, else $FLOE_HOME/venv (default ~/.cache/floe).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  MemoryFileIO,
  conformBatch,
  readParquetBatches,
  writeParquetFile,
  formatDecimal,
  fromBytes,
  type PrimitiveType,
  type Schema,
} from '../../iceberg';

function findPython(): string | undefined {
  const candidates = [
    process.env.FLOE_PYTHON,
    join(process.env.FLOE_HOME ?? join(homedir(), '.cache', 'floe'), 'venv', 'bin', 'python'),
  ].filter((p): p is string => !!p && existsSync(p));
  return candidates.find((p) => {
    try {
      execFileSync(p, ['-c', 'import pyarrow'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}
const python = findPython();
const skip = python ? false : 'no python with pyarrow (set FLOE_PYTHON)';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: false, type: 'timestamptz' },
    { id: 3, name: 'name', required: false, type: 'string' },
    { id: 4, name: 'amount', required: false, type: 'decimal(12, 3)' },
    { id: 5, name: 'tags', required: false, type: { type: 'list', 'element-id': 6, element: 'int', 'element-required': false } },
    { id: 7, name: 'day', required: false, type: 'date' },
  ],
};

test('pyarrow reads floe Parquet: field ids, logical types and values', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-pq-'));
  try {
    const w = await writeParquetFile(schema, {
      rows: [
        { id: 1n, ts: 1_700_000_000_000_001n, name: 'ä', amount: '-1.5', tags: [1, null], day: 19000 },
        { id: 2n, ts: null, name: null, amount: null, tags: null, day: null },
      ],
    });
    writeFileSync(join(dir, 'f.parquet'), w.bytes);
    const out = execFileSync(python!, [
      '-c',
      `
import json, sys, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
ids = {}
def walk(field, prefix=''):
    if field.metadata and b'PARQUET:field_id' in field.metadata:
        ids[prefix + field.name] = int(field.metadata[b'PARQUET:field_id'])
    t = field.type
    if hasattr(t, 'value_field'): walk(t.value_field, prefix + field.name + '.')
for fld in f.schema_arrow: walk(fld)
t = f.read()
print(json.dumps({'ids': ids, 'types': {fld.name: str(fld.type) for fld in t.schema},
  'rows': t.to_pylist(), 'parquet': str(f.schema)}, default=str))
`,
      join(dir, 'f.parquet'),
    ]).toString();
    const r = JSON.parse(out) as { ids: Record<string, number>; types: Record<string, string>; rows: unknown[]; parquet: string };
    assert.deepEqual(r.ids, { id: 1, ts: 2, name: 3, amount: 4, tags: 5, 'tags.element': 6, day: 7 });
    assert.match(r.parquet, /int64 field_id=1 id/);
    assert.match(r.parquet, /field_id=6 element/);
    assert.match(r.parquet, /Timestamp\(isAdjustedToUTC=true, timeUnit=microseconds/);
    assert.deepEqual(r.types, {
      id: 'int64',
      ts: 'timestamp[us, tz=UTC]',
      name: 'string',
      amount: 'decimal128(12, 3)',
      tags: 'list<element: int32>',
      day: 'date32[day]',
    });
    assert.deepEqual(r.rows, [
      { id: 1, ts: '2023-11-14 22:13:20.000001+00:00', name: 'ä', amount: '-1.500', tags: [1, null], day: '2022-01-08' },
      { id: 2, ts: null, name: null, amount: null, tags: null, day: null },
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('floe reads pyarrow Parquet (large_string, ms timestamps, snappy, many row groups) and conforms it', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-pq-'));
  try {
    execFileSync(python!, [
      '-c',
      `
import sys, pyarrow as pa, pyarrow.parquet as pq
n = 10000
t = pa.table({
  'id': pa.array(range(n), pa.int64()),
  'ts': pa.array([i * 1000 for i in range(n)], pa.timestamp('ms', tz='UTC')),
  'name': pa.array([None if i % 10 == 0 else f'n{i}' for i in range(n)], pa.large_string()),
  'day': pa.array([i % 365 for i in range(n)], pa.date32()),
})
pq.write_table(t, sys.argv[1], compression='snappy', row_group_size=3000)
`,
      join(dir, 'p.parquet'),
    ]);
    const io = new MemoryFileIO();
    await io.write('memory://p.parquet', new Uint8Array(readFileSync(join(dir, 'p.parquet'))));
    let n = 0,
      nulls = 0;
    for await (const b of readParquetBatches(io, 'memory://p.parquet', { wholeFileBelowBytes: 0 })) {
      const c = conformBatch(schema, b);
      assert.equal(String(c.schema.fields[1]!.type), 'Timestamp<MICROSECOND, UTC>');
      assert.equal(c.getChild('ts')!.data[0]!.values[0], BigInt(n) * 1_000_000n); // ms -> µs
      nulls += c.getChild('name')!.nullCount;
      assert.equal(c.getChild('amount')!.nullCount, b.numRows); // not in the file: all null
      n += b.numRows;
    }
    assert.equal(n, 10_000);
    assert.equal(nulls, 1000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('decimal, fixed and time columns: pyarrow reads their ids, types, values and the same min/max as our bounds', { skip }, async () => {
  const s: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'small', required: false, type: 'decimal(9, 2)' },
      { id: 2, name: 'wide', required: true, type: 'decimal(38, 10)' },
      { id: 3, name: 'hash', required: false, type: 'fixed[4]' },
      { id: 4, name: 'at', required: false, type: 'time' },
    ],
  };
  const rows = [
    // decimals as the decoder hands them over: unscaled bigints
    { small: -1234567n, wide: 10n ** 37n + 1n, hash: Uint8Array.of(0xde, 0xad, 0xbe, 0xef), at: 49_507_250_000n },
    { small: 5n, wide: -(10n ** 38n - 1n), hash: Uint8Array.of(0, 0, 0, 1), at: 0n },
    { small: null, wide: 0n, hash: null, at: 86_399_999_999n },
  ];
  const w = await writeParquetFile(s, { rows });
  const dir = mkdtempSync(join(tmpdir(), 'floe-pq-'));
  try {
    writeFileSync(join(dir, 'f.parquet'), w.bytes);
    const out = execFileSync(python!, [
      '-c',
      `
import json, sys, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
t = f.read()
rg = f.metadata.row_group(0)
stats = {}
for i in range(rg.num_columns):
    c = rg.column(i)
    st = c.statistics
    stats[c.path_in_schema] = [str(st.min), str(st.max), st.null_count] if st is not None and st.has_min_max else None
ids = {fld.name: int(fld.metadata[b'PARQUET:field_id']) for fld in f.schema_arrow}
rows = [{k: (v.hex() if isinstance(v, bytes) else str(v) if v is not None else None) for k, v in r.items()} for r in t.to_pylist()]
print(json.dumps({'ids': ids, 'types': {fld.name: str(fld.type) for fld in t.schema}, 'rows': rows, 'stats': stats}))
`,
      join(dir, 'f.parquet'),
    ]).toString();
    const r = JSON.parse(out) as {
      ids: Record<string, number>;
      types: Record<string, string>;
      rows: unknown[];
      stats: Record<string, [string, string, number] | null>;
    };
    assert.deepEqual(r.ids, { small: 1, wide: 2, hash: 3, at: 4 });
    assert.deepEqual(r.types, { small: 'decimal128(9, 2)', wide: 'decimal128(38, 10)', hash: 'fixed_size_binary[4]', at: 'time64[us]' });
    assert.deepEqual(r.rows, [
      { small: '-12345.67', wide: '1000000000000000000000000000.0000000001', hash: 'deadbeef', at: '13:45:07.250000' },
      { small: '0.05', wide: '-9999999999999999999999999999.9999999999', hash: '00000001', at: '00:00:00' },
      { small: null, wide: '0E-10', hash: null, at: '23:59:59.999999' },
    ]);
    // our Iceberg bounds are the true min/max, as parquet-rs's own column chunk statistics say
    const st = w.stats;
    const dec = (id: number, scale: number, b: Map<number, Uint8Array>) =>
      formatDecimal(fromBytes(s.fields[id - 1]!.type as PrimitiveType, b.get(id)!) as bigint, scale);
    assert.deepEqual([dec(1, 2, st.lowerBounds!), dec(1, 2, st.upperBounds!)], ['-12345.67', '0.05']);
    assert.deepEqual(
      [dec(2, 10, st.lowerBounds!), dec(2, 10, st.upperBounds!)],
      ['-9999999999999999999999999999.9999999999', '1000000000000000000000000000.0000000001'],
    );
    assert.deepEqual(
      [Buffer.from(st.lowerBounds!.get(3)!).toString('hex'), Buffer.from(st.upperBounds!.get(3)!).toString('hex')],
      ['00000001', 'deadbeef'],
    );
    assert.deepEqual([fromBytes('time', st.lowerBounds!.get(4)!), fromBytes('time', st.upperBounds!.get(4)!)], [0n, 86_399_999_999n]);
    assert.deepEqual(Object.fromEntries(st.nullValueCounts!), { 1: 1, 2: 0, 3: 1, 4: 0 });
    assert.deepEqual(r.stats.small, ['-12345.67', '0.05', 1]);
    assert.deepEqual(r.stats.wide, ['-9999999999999999999999999999.9999999999', '1000000000000000000000000000.0000000001', 0]);
    assert.deepEqual(r.stats.hash, [String.raw`b'\x00\x00\x00\x01'`, String.raw`b'\xde\xad\xbe\xef'`, 1]);
    assert.deepEqual(r.stats.at, ['00:00:00', '23:59:59.999999', 0]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
