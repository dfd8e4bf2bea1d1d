import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  compareBytes,
  compareStrings,
  compareValues,
  decimalFromBytes,
  decimalToBytes,
  formatDecimal,
  fromBytes,
  toBytes,
  unscaledDecimal,
  isIcebergError,
  type PrimitiveValue,
  type PrimitiveType,
} from '../../iceberg';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

test('Appendix D encodings match the spec byte for byte', () => {
  const cases: Array<[PrimitiveType, PrimitiveValue, string]> = [
    ['boolean', true, '01'],
    ['boolean', false, '00'],
    ['int', 1, '01000000'],
    ['int', -2, 'feffffff'],
    ['long', 1n, '0100000000000000'],
    ['long', -(2n ** 63n), '0000000000000080'],
    ['float', 1, '0000803f'],
    ['double', -2.5, '00000000000004c0'],
    ['date', 19000, '384a0000'],
    ['time', 3_600_000_000n, '00a493d600000000'],
    ['timestamp', 1_700_000_000_000_000n, '00401e18240a0600'],
    ['timestamptz', -1n, 'ffffffffffffffff'],
    ['timestamp_ns', 1n, '0100000000000000'],
    ['string', 'iceberg', '69636562657267'],
    ['string', 'é', 'c3a9'],
    ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7', 'f79c3e09677c4bbda4793f349cb785e7'],
    ['fixed[3]', Uint8Array.of(1, 2, 3), '010203'],
    ['binary', Uint8Array.of(0xff, 0), 'ff00'],
    ['decimal(9, 2)', 1420n, '058c'], // 14.20 unscaled, minimal two's complement
    ['decimal(9, 2)', '14.20', '058c'],
    ['decimal(9, 2)', 14.2, '058c'],
    ['decimal(9, 2)', -1n, 'ff'],
    ['decimal(9, 0)', 128n, '0080'],
    ['decimal(9, 0)', -129n, 'ff7f'],
    ['decimal(9, 0)', 0n, '00'],
  ];
  for (const [type, value, expected] of cases) {
    assert.equal(hex(toBytes(type, value)), expected, `${type} ${String(value)}`);
  }
});

test('fromBytes inverts toBytes for every primitive type', () => {
  const cases: Array<[PrimitiveType, PrimitiveValue]> = [
    ['boolean', true],
    ['int', -123],
    ['long', 2n ** 62n],
    ['float', 1.5],
    ['double', Math.PI],
    ['date', -1],
    ['time', 86_399_999_999n],
    ['timestamp', -5n],
    ['timestamptz', 1n],
    ['timestamp_ns', 10n ** 18n],
    ['timestamptz_ns', 7n],
    ['string', 'héllo 🌍'],
    ['uuid', '00000000-0000-0000-0000-0000000000ff'],
    ['fixed[2]', Uint8Array.of(9, 8)],
    ['binary', Uint8Array.of()],
    ['decimal(38, 10)', -(10n ** 37n) + 1n],
    ['decimal(5, 2)', 99999n],
  ];
  for (const [type, value] of cases) assert.deepEqual(fromBytes(type, toBytes(type, value)), value, type);
  assert.ok(Number.isNaN(fromBytes('double', toBytes('double', NaN)) as number));
});

test('decimal helpers', () => {
  for (let v = -70000n; v <= 70000n; v += 997n) assert.equal(decimalFromBytes(decimalToBytes(v)), v);
  assert.equal(decimalToBytes(2n ** 127n - 1n).length, 16);
  assert.equal(unscaledDecimal('-0.5', 3), -500n);
  assert.equal(unscaledDecimal('12', 2), 1200n);
  assert.equal(unscaledDecimal('1.230', 2), 123n); // trailing zeros beyond the scale are exact
  assert.throws(
    () => unscaledDecimal('1.234', 2),
    (e) => isIcebergError(e, 'DataInvalid'),
  );
  assert.equal(formatDecimal(-5n, 2), '-0.05');
  assert.equal(formatDecimal(123456n, 3), '123.456');
});

test('values that do not fit the type are rejected with expected vs found', () => {
  assert.throws(() => toBytes('int', 2 ** 31), /expected a 32-bit integer/);
  assert.throws(
    () => toBytes('int', 1.5),
    (e) => isIcebergError(e, 'DataInvalid'),
  );
  assert.throws(() => toBytes('long', 2n ** 63n), /64-bit/);
  assert.throws(() => toBytes('long', 2 ** 60), /safe-integer/);
  assert.throws(() => toBytes('decimal(3, 0)', 1000n), /at most 3 digits/);
  assert.throws(() => toBytes('fixed[4]', Uint8Array.of(1)), /4 bytes/);
  assert.throws(() => toBytes('uuid', 'nope'), /UUID/);
  assert.throws(() => fromBytes('int', Uint8Array.of(1, 2)), /4 bytes/);
  assert.throws(() => fromBytes('string', Uint8Array.of(0xff)));
});

test('promoted bounds decode: 4-byte int as long, 4-byte float as double', () => {
  assert.equal(fromBytes('long', toBytes('int', -7)), -7n);
  assert.equal(fromBytes('double', toBytes('float', 0.5)), 0.5);
});

test('ordering: strings by code point, floats with -0 < 0 < NaN, bytes unsigned', () => {
  // U+FFFF vs U+10000: UTF-16 `<` says the supplementary char is smaller; code point order says larger
  assert.equal(compareStrings('\uffff', '\u{10000}'), -1);
  assert.equal(compareBytes('string', toBytes('string', '\uffff'), toBytes('string', '\u{10000}')), -1);
  assert.equal(compareStrings('ab', 'abc'), -1);
  assert.equal(compareStrings('b', 'abc'), 1);
  assert.equal(compareValues('double', -0, 0), -1);
  assert.equal(compareValues('double', NaN, Infinity), 1);
  assert.equal(compareValues('float', 1, 1), 0);
  assert.equal(compareValues('binary', Uint8Array.of(0x80), Uint8Array.of(0x7f)), 1);
  assert.equal(compareValues('long', -1n, 1), -1);
  assert.equal(compareValues('decimal(5, 2)', '1.50', 149n), 1);
  assert.equal(compareBytes('decimal(5, 2)', toBytes('decimal(5, 2)', -1n), toBytes('decimal(5, 2)', 1n)), -1);
  assert.equal(compareBytes('int', toBytes('int', -1), toBytes('int', 1)), -1); // not byte order
  assert.equal(compareBytes('timestamptz', toBytes('timestamptz', 256n), toBytes('timestamptz', 255n)), 1);
});
