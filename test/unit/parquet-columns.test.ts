/**
 * columnsToRecordBatch string encoding: chunks of short strings (joined) and of long ones
 * (written value by value), ASCII and not, across chunk boundaries and buffer growth.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { columnsToRecordBatch, icebergToArrowSchema, rowsToRecordBatch, type Schema } from '../../iceberg';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 's', required: false, type: 'string' }] };

function decoded(values: Array<string | null>): Array<string | null> {
  const batch = columnsToRecordBatch(schema, { s: values }, values.length, icebergToArrowSchema(schema));
  const data = batch.data.children[0]!;
  const offsets = data.valueOffsets;
  const bytes = data.values as Uint8Array;
  assert.equal(offsets[values.length], bytes.length, 'last offset = bytes of values');
  assert.ok(
    bytes.buffer.byteLength <= bytes.length + (bytes.length >> 3) + 4096,
    `buffer ${bytes.buffer.byteLength} for ${bytes.length} bytes`,
  );
  return [...batch.getChildAt(0)!] as Array<string | null>;
}

test('strings round-trip through every encoding path, across chunks', () => {
  const n = 65536 * 3 + 17; // four chunks
  const long = (i: number): string => `${'x'.repeat(40)}-${i}`;
  const cases: Array<[string, (i: number) => string | null]> = [
    ['short ASCII', (i) => (i % 5 === 0 ? null : `v${i % 97}`)],
    ['long ASCII', (i) => (i % 11 === 0 ? null : long(i))],
    ['short, some non-ASCII', (i) => (i % 1000 === 3 ? `é${i}` : `a${i % 13}`)],
    ['long, some non-ASCII', (i) => (i % 999 === 0 ? `😀${long(i)}ü` : long(i))],
    // a first chunk of short ASCII sizes the buffer; later chunks of long 3-byte text outgrow it
    ['short then long non-ASCII', (i) => (i < 65536 ? '' : `${'漢'.repeat(30)}${i}`)],
    ['empty and null', (i) => (i % 2 === 0 ? '' : null)],
    // the first chunk's estimate is far too high for the rest: trimmed at the end
    ['long then empty', (i) => (i < 65536 ? long(i) : '')],
  ];
  for (const [what, gen] of cases) {
    const values = Array.from({ length: n }, (_, i) => gen(i));
    const got = decoded(values);
    assert.equal(got.length, n, what);
    for (let i = 0; i < n; i++) if (got[i] !== values[i]) assert.fail(`${what}: row ${i}: ${got[i]} !== ${values[i]}`);
  }
});

test('an unpaired surrogate is refused in a long-string chunk too', () => {
  const values = Array.from({ length: 100 }, (_, i) => `${'y'.repeat(30)}${i}`);
  values[42] = `${'y'.repeat(30)}\ud800`;
  assert.throws(() => decoded(values), /column s: expected a Unicode string \(no unpaired surrogates\)/);
  values[42] = `${'y'.repeat(30)}\ud83d\ude00`; // a pair is fine
  assert.equal(decoded(values)[42], values[42]);
  assert.throws(() => rowsToRecordBatch(schema, [{ s: 'x'.repeat(20) }, { s: 5 }]), /column s: expected a string, found 5/);
});

test('strings of nearly even lengths across chunks: the values buffer is allocated once (no regrowth, no trimming copy)', (t) => {
  // Lengths vary a little from chunk to chunk, as real values do: an estimate from the first
  // chunk alone falls just short, which used to double the buffer near the end and then copy it
  // to trim it (two copies of the whole column).
  const n = 65536 * 4;
  const values = Array.from({ length: n }, (_, i) => `${'p'.repeat(95 + (i >> 16))}${i % 10}`);
  const allocs: number[] = [];
  const alloc = Buffer.allocUnsafeSlow.bind(Buffer);
  t.mock.method(Buffer, 'allocUnsafeSlow', (size: number) => {
    allocs.push(size);
    return alloc(size);
  });
  const got = decoded(values);
  t.mock.restoreAll();
  assert.equal(allocs.filter((s) => s > 0).length, 1, `allocations: ${allocs.join(', ')}`);
  for (let i = 0; i < n; i += 4099) assert.equal(got[i], values[i]);
});
