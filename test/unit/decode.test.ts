import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeRecord, DecodeError, type KafkaRecord } from '../../activities/decode';
import type { ColumnConfig } from '../../config';

const cols: ColumnConfig[] = [
  { name: 'id', type: 'long', required: true },
  { name: 'n', type: 'int', required: false },
  { name: 'amount', type: 'double', required: false },
  { name: 'ts', type: 'timestamptz', required: true },
  { name: 'day', type: 'date', required: false },
  { name: 'city', type: 'string', required: false, path: 'address.city' },
  { name: 'k', type: 'string', required: false, source: 'key' },
  { name: 'p', type: 'int', required: true, source: 'partition' },
  { name: 'o', type: 'long', required: true, source: 'offset' },
];
const rec = (value: string | null, key: string | null = 'k1'): KafkaRecord => ({
  partition: 3, offset: '9007199254740993', timestamp: '1782864000000',
  key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value),
});

describe('decodeRecord', () => {
  it('maps JSON and Kafka metadata to typed values; 64-bit ids stay exact', () => {
    const row = decodeRecord(cols, rec('{"id": 9007199254740993, "n": 7, "amount": 1.5, "ts": "2026-07-01T00:00:00.123456Z", "day": "2026-07-01", "address": {"city": "Oslo"}}'));
    assert.equal(row.id, 9007199254740993n);
    assert.equal(row.n, 7);
    assert.equal(row.amount, 1.5);
    assert.equal(row.ts, 1782864000123456n);
    assert.equal(row.day, 20635);
    assert.equal(row.city, 'Oslo');
    assert.equal(row.k, 'k1');
    assert.equal(row.p, 3);
    assert.equal(row.o, 9007199254740993n);
  });
  it('accepts epoch millis and offsets in timestamps', () => {
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": 1782864000000}')).ts, 1782864000000000n);
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": "2026-07-01T02:00:00+02:00"}')).ts, 1782864000000000n);
  });
  const bad: Array<[string, string | null, RegExp]> = [
    ['not JSON', '{"id": 1,', /value: not valid JSON/],
    ['not an object', '[1,2]', /expected a JSON object/],
    ['tombstone', null, /null value/],
    ['missing required', '{"ts": "2026-07-01T00:00:00Z"}', /id: required field is missing/],
    ['wrong type', '{"id": "abc", "ts": "2026-07-01T00:00:00Z"}', /id: expected an integer, found "abc"/],
    ['int overflow', '{"id": 1, "n": 3000000000, "ts": "2026-07-01T00:00:00Z"}', /does not fit a 32-bit int/],
    ['fraction in long', '{"id": 1.5, "ts": "2026-07-01T00:00:00Z"}', /id: expected an integer, found 1.5/],
    ['zone-less timestamptz', '{"id": 1, "ts": "2026-07-01T00:00:00"}', /needs a zone/],
    ['bad date', '{"id": 1, "ts": 0, "day": "July 1"}', /expected a date YYYY-MM-DD/],
  ];
  for (const [name, value, re] of bad) {
    it(`rejects ${name} with a reason`, () => {
      assert.throws(() => decodeRecord(cols, rec(value)), (e: Error) => e instanceof DecodeError && re.test(e.message));
    });
  }
});
