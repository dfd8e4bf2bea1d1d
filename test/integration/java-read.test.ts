/**
 * Iceberg Java reads floe's data files: Iceberg's generic Parquet reader (iceberg-parquet +
 * iceberg-data over parquet-mr 1.16, jars installed by `floe stack up` beside the reference REST
 * server) decodes every row of files from both encoders — the flat encoder with each codec, small
 * pages, several row groups and a dictionary that falls back to PLAIN, and parquet-wasm for a
 * nested schema — with the Iceberg schema taken from the files' field ids.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeParquetFile, type Columns, type ParquetWriteOptions, type Schema } from '../../iceberg';
import { stackPaths } from '../../stack/paths';
import { columns, isNullRow, schema } from '../fixtures/flat-table';

// the shared flat table plus a column of nulls only (no dictionary page, no values)
const flat: Schema = { ...schema, fields: [...schema.fields, { id: 14, name: 'none', required: false, type: 'string' }] };
const N = 5000;
const flatColumns = (): Columns => ({ ...columns(N), none: new Array<null>(N).fill(null) });

interface JavaRead {
  file: string;
  rows: number;
  nonNull: number[];
  ids: Record<string, number>;
  sample: string[];
}

const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const skip = existsSync(join(libs, 'iceberg-parquet-1.10.1.jar')) ? false : `no Iceberg Java Parquet reader in ${libs} (floe stack up)`;

test('Iceberg Java (iceberg-parquet over parquet-mr) reads every row of both encoders’ files', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-java-'));
  try {
    const files: Array<{ name: string; schema: Schema; options: ParquetWriteOptions; columns: Columns }> = [
      { name: 'flat-zstd', schema: flat, options: { codec: 'zstd' }, columns: flatColumns() },
      { name: 'flat-gzip', schema: flat, options: { codec: 'gzip' }, columns: flatColumns() },
      { name: 'flat-none', schema: flat, options: { codec: 'uncompressed' }, columns: flatColumns() },
      // pages of ~2 KiB, 4 row groups, `u`'s dictionary overflowing into PLAIN
      {
        name: 'flat-small',
        schema: flat,
        options: { codec: 'zstd', pageSizeBytes: 2048, rowGroupRows: 1500, dictSizeBytes: 1500 },
        columns: flatColumns(),
      },
    ];
    const paths: string[] = [];
    for (const f of files) {
      const w = await writeParquetFile(f.schema, { columns: f.columns, numRows: N }, f.options);
      const p = join(dir, `${f.name}.parquet`);
      writeFileSync(p, w.bytes);
      paths.push(p);
    }
    // parquet-wasm's file of a nested schema, for comparison
    const nested: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'tags', required: false, type: { type: 'list', 'element-id': 3, element: 'string', 'element-required': false } },
      ],
    };
    const nw = await writeParquetFile(nested, {
      rows: Array.from({ length: 100 }, (_, k) => ({ id: BigInt(k), tags: k % 2 ? null : [`t${k}`, null] })),
    });
    writeFileSync(join(dir, 'nested.parquet'), nw.bytes);
    paths.push(join(dir, 'nested.parquet'));

    const cp = `${libs}/*`;
    execFileSync('javac', ['-d', dir, '-cp', cp, join(__dirname, '..', 'fixtures', 'java', 'ReadParquet.java')], { stdio: 'pipe' });
    const out = execFileSync('java', ['-cp', `${cp}:${dir}`, 'ReadParquet', ...paths], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    const reads = out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as JavaRead);
    assert.equal(reads.length, paths.length);

    const nulls = [...Array(N).keys()].filter(isNullRow).length;
    const nonNull = flat.fields.map((f) => (f.name === 'none' ? 0 : f.required ? N : N - nulls));
    for (const r of reads.slice(0, files.length)) {
      assert.equal(r.rows, N, r.file);
      assert.deepEqual(r.nonNull, nonNull, r.file);
      assert.deepEqual(r.ids, Object.fromEntries(flat.fields.map((f) => [f.name, f.id])), r.file);
      assert.equal(
        r.sample[1],
        'Record(false, -2499, 9223371913397985988, 0.14285715, -148.5, 1970-01-02, 00:00:00.000001, 1970-01-01T00:00:00.001, ' +
          '1970-01-01T00:00:00.000007Z, , java.nio.HeapByteBuffer[pos=0 lim=1 cap=1], 1970-01-01T00:00:00.001Z, user-1-x, null)',
        r.file,
      );
      assert.equal(
        r.sample[3],
        'Record(null, -2497, null, null, null, null, null, null, 1970-01-01T00:00:00.000021Z, null, null, null, user-3-xxx, null)',
      );
    }
    const n = reads[files.length]!;
    assert.equal(n.rows, 100);
    assert.deepEqual(n.nonNull, [100, 50]);
    assert.equal(n.sample[0], 'Record(0, [t0, null])');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
