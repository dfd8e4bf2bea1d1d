import * as arrow from 'apache-arrow';
import { buildData, columnsToRecordBatch, icebergToArrowSchema, MetricsCollector, readFooterFacts, highCardinalityColumns } from './iceberg/parquet';
import { writerProperties } from './iceberg/parquet/writer';
import { parquetWasm } from './iceberg/parquet/wasm';
const src = require('fs').readFileSync('bench/parquet-write.ts', 'utf8') as string;
void src;
// reuse bench generator by importing it is not exported; copy minimal
import type { Schema } from './iceberg/spec/types';
const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [
    { id: 1, name: 'id', required: true, type: 'long' }, { id: 2, name: 'event_time', required: true, type: 'timestamptz' },
    { id: 3, name: 'event_type', required: true, type: 'string' }, { id: 4, name: 'user_id', required: true, type: 'string' },
    { id: 5, name: 'amount', required: false, type: 'double' }, { id: 6, name: 'quantity', required: false, type: 'int' },
    { id: 7, name: 'flag', required: false, type: 'boolean' }, { id: 8, name: 'payload', required: false, type: 'string' } ] };
const n = 1_000_000;
let a = 42; const r = () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
const ET = ['page_view', 'click', 'add_to_cart', 'purchase', 'signup', 'logout', 'search', 'share'];
const id = new BigInt64Array(n), et = new BigInt64Array(n); const etype: string[] = [], uid: string[] = [], pl: (string|null)[] = [], am: (number|null)[] = [], q: (number|null)[] = [], fl: (boolean|null)[] = [];
for (let i = 0; i < n; i++) { id[i] = BigInt(i); et[i] = 1_700_000_000_000_000n + BigInt(i) * 1000n; etype.push(ET[Math.floor(r() * 8)]!); uid.push(`user-${Math.floor(r() * 100000).toString().padStart(6, '0')}`); am.push(r() < 0.05 ? null : Math.round(r() * 100000) / 100); q.push(r() < 0.05 ? null : Math.floor(r() * 20)); fl.push(r() < 0.05 ? null : r() < 0.5); let p = ''; while (p.length < 100) p += `w${Math.floor(r() * 1e6).toString(36)} `; pl.push(r() < 0.02 ? null : p.slice(0, 100)); }
const cols: Record<string, ArrayLike<unknown>> = { id, event_time: et, event_type: etype, user_id: uid, amount: am, quantity: q, flag: fl, payload: pl };
const arrowSchema = icebergToArrowSchema(schema);
const T = (label: string, fn: () => any) => { const t = performance.now(); const v = fn(); console.log(label.padEnd(28), (performance.now() - t).toFixed(0), 'ms'); return v; };
for (let run = 0; run < 2; run++) {
  console.log('--- run', run);
  schema.fields.forEach((f, k) => T(`build ${f.name}`, () => buildData(f.type, arrowSchema.fields[k]!.type, (i) => cols[f.name]![i], n, !f.required, f.name)));
  const batch = T('columnsToRecordBatch', () => columnsToRecordBatch(schema, cols, n, arrowSchema));
  T('metrics', () => { const m = new MetricsCollector(schema); m.add(batch); return m.result(); });
  const plain = T('highCard', () => highCardinalityColumns(batch));
  const ipc = T('tableToIPC', () => arrow.tableToIPC(new arrow.Table(arrowSchema, [batch]), 'stream'));
  const wt = T('fromIPCStream', () => parquetWasm.Table.fromIPCStream(ipc));
  const bytes = T('writeParquet', () => parquetWasm.writeParquet(wt, writerProperties({ codec: 'zstd' }, plain)));
  const t = performance.now(); readFooterFacts(schema, bytes).then(() => console.log('footer', (performance.now() - t).toFixed(0)));
}
