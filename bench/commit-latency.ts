/**
 * Commit latency of a fast append as the table's history grows: p50/p99 over `--samples` appends
 * measured after 10, 1,000 and 10,000 earlier commits (SQLite catalog, local file:// warehouse,
 * one small data file per commit, manifest merging on as by default). The table has floe's default
 * properties, as table/tables.ts creates ingest tables: delete-after-commit with 100 previous
 * metadata versions, Parquet/zstd. Between measuring points the table is grown with the same
 * appends (timed too, reported as the build rate).
 * Reference: the same append through PyIceberg (SqlCatalog on the same kind of table) at the first
 * two points, when the stack's venv exists, printed beside ours with the ratio.
 * Usage: npx tsx bench/commit-latency.ts [--points 10,1000,10000] [--samples 50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  catalogFromConfig,
  newTableMetadata,
  fastAppend,
  METADATA_DELETE_AFTER_COMMIT,
  METADATA_PREVIOUS_VERSIONS_MAX,
  PARQUET_COMPRESSION,
  WRITE_FORMAT_DEFAULT,
  type DataFile,
} from '../iceberg';
import { runPythonJson } from '../stack/python';
import { pythonInstalled } from '../stack/python';
import { benchArgs } from './support/args';

const args = benchArgs('npx tsx bench/commit-latency.ts [--points 10,1000,10000] [--samples 50]', {
  points: { type: 'string', default: '10,1000,10000' },
  samples: { type: 'string', default: '50' },
});
const POINTS = args.points.split(',').map(Number);
const SAMPLES = Number(args.samples);

const file = (i: number): DataFile => ({
  content: 0,
  filePath: `file:///bench/data/f-${i}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: {},
  recordCount: 100,
  fileSizeInBytes: 4096,
  valueCounts: new Map([[1, 100]]),
  nullValueCounts: new Map([[1, 0]]),
});

/** floe's table properties for ingest tables (table/tables.ts `createTable`), kept in step by hand. */
const FLOE_TABLE_PROPERTIES: Record<string, string> = {
  [WRITE_FORMAT_DEFAULT]: 'parquet',
  [PARQUET_COMPRESSION]: 'zstd',
  [METADATA_DELETE_AFTER_COMMIT]: 'true',
  [METADATA_PREVIOUS_VERSIONS_MAX]: '100',
};

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

const PY_REF = `
import json, sys, time, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType
points = [int(x) for x in sys.argv[2].split(',')]; samples = int(sys.argv[3]); props = json.loads(sys.argv[4])
cat = SqlCatalog("bench", uri=f"sqlite:///{sys.argv[1]}/py.db", warehouse=f"file://{sys.argv[1]}/pywh")
cat.create_namespace("b")
t = cat.create_table("b.t", Schema(NestedField(1, "id", LongType(), required=False)), properties=props)
data = pa.table({"id": pa.array(range(100), pa.int64())})
out = {}; n = 0
for p in points:
    while n < p:
        t.append(data); n += 1
    lat = []
    for _ in range(samples):
        t0 = time.perf_counter(); t.append(data); lat.append((time.perf_counter() - t0) * 1000); n += 1
    lat.sort(); out[p] = [lat[len(lat)//2], lat[min(len(lat)-1, int(0.99*len(lat)))]]
print(json.dumps(out))
`;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'floe-commit-bench-'));
  const { catalog, io } = await catalogFromConfig({
    type: 'sql',
    name: 'bench',
    uri: `sqlite:///${dir}/catalog.db`,
    warehouse: `file://${dir}/wh`,
  });
  const id = { namespace: ['b'], name: 't' };
  await catalog.createNamespace(['b']);
  await catalog.createTable(
    id,
    newTableMetadata({
      location: `file://${dir}/wh/b/t`,
      tableUuid: randomUUID(),
      schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'long' }] },
      properties: FLOE_TABLE_PROPERTIES,
    }),
  );
  let n = 0;
  const append = async () => {
    const t = await catalog.loadTable(id);
    await fastAppend(catalog, io, t, [file(n++)]);
  };
  console.log(
    `floe commit latency (load + fast append + CAS), SQLite catalog, file:// warehouse, floe's table properties, ${SAMPLES} samples per point`,
  );
  const ours: Record<number, [number, number]> = {};
  for (const p of POINTS) {
    const b0 = performance.now(),
      before = n;
    while (n < p) await append();
    const buildRate = (n - before) / ((performance.now() - b0) / 1000);
    const lat: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now();
      await append();
      lat.push(performance.now() - t0);
    }
    const manifests = (await catalog.loadTable(id)).metadata;
    ours[p] = [pct(lat, 0.5), pct(lat, 0.99)];
    console.log(
      `after ${String(p).padStart(6)} commits: p50 ${pct(lat, 0.5).toFixed(1)} ms  p99 ${pct(lat, 0.99).toFixed(1)} ms  (grew at ${buildRate.toFixed(0)} commits/s; ${manifests.snapshots.length} snapshots in metadata)`,
    );
  }
  await catalog.close();
  const refPoints = POINTS.filter((p) => p <= 1000);
  if (pythonInstalled() && refPoints.length) {
    const ref = await runPythonJson<Record<string, [number, number]>>(
      PY_REF,
      [dir, refPoints.join(','), String(SAMPLES), JSON.stringify(FLOE_TABLE_PROPERTIES)],
      {
        timeoutMs: 30 * 60_000,
      },
    );
    console.log(
      '\nreference: PyIceberg table.append of a 100-row table (it also writes that Parquet file; floe appends a prepared DataFile)',
    );
    console.log('point    floe p50/p99 ms     pyiceberg p50/p99 ms   ratio p50 (pyiceberg/floe)');
    for (const p of refPoints) {
      const [a, b] = ours[p]!,
        [c, d] = ref[String(p)]!;
      console.log(
        `${String(p).padEnd(8)} ${a.toFixed(1)}/${b.toFixed(1)}`.padEnd(29) +
          `${c.toFixed(1)}/${d.toFixed(1)}`.padEnd(23) +
          `${(c / a).toFixed(2)}x`,
      );
    }
  } else {
    console.log('(no PyIceberg reference: run `npx tsx cli/main.ts stack up` first)');
  }
  rmSync(dir, { recursive: true, force: true });
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
