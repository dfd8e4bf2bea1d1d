/**
 * fast-check generators of what the fuzzer feeds floe: a table schema (every Iceberg type the value
 * format can carry, nested struct/list/map, optional and required), a partition spec over it with
 * every transform, and records for it, from the whole valid domain of each type (bounds, every
 * Unicode class, strings up to 64 KiB, NaN, ±Infinity, -0) and, as mutations the encoders apply
 * (formats.ts), from outside it.
 */
import fc from 'fast-check';
import { transformResultType, type PrimitiveType } from '../../../iceberg';
import { MapValue, decimalOf, fixedOf, type FField, type FType, type MV, type Prim } from './model';

/** The value formats, as a table's `value` config and its framing name them. */
export type FuzzFormat = 'json' | 'avro' | 'avro-registry' | 'protobuf' | 'json-schema';
export const FORMATS: readonly FuzzFormat[] = ['json', 'avro', 'avro-registry', 'protobuf', 'json-schema'];

/** Every primitive, as the JSON columns and Avro's logical types carry them ('decimal' and 'fixed' get their parameters below). */
const ALL = [
  'boolean',
  'int',
  'long',
  'float',
  'double',
  'string',
  'binary',
  'date',
  'time',
  'timestamp',
  'timestamptz',
  'uuid',
  'decimal',
  'fixed',
] as Prim[];
/** The primitives each format's schema can express (docs/formats.md's type mapping). */
const PRIMS: Record<FuzzFormat, readonly Prim[]> = {
  json: ALL,
  avro: ALL,
  'avro-registry': ALL,
  protobuf: ['boolean', 'int', 'long', 'float', 'double', 'string', 'binary', 'timestamptz'],
  'json-schema': ['boolean', 'long', 'double', 'string', 'binary', 'date', 'time', 'timestamptz', 'uuid'],
};

export const INT_MIN = -(2 ** 31),
  INT_MAX = 2 ** 31 - 1;
export const LONG_MIN = -(2n ** 63n),
  LONG_MAX = 2n ** 63n - 1n;
export const MICROS_PER_DAY = 86_400_000_000n;
/** ISO dates floe's JSON reads: years 0000 to 9999. */
export const ISO_MIN_DAYS = -719_528,
  ISO_MAX_DAYS = 2_932_896;
/** google.protobuf.Timestamp's range: 0001-01-01 to 9999-12-31. */
const PROTO_MIN_S = -62_135_596_800n,
  PROTO_MAX_S = 253_402_300_799n;

const primArb = (format: FuzzFormat): fc.Arbitrary<Prim> =>
  fc.constantFrom(...PRIMS[format]).chain((p): fc.Arbitrary<Prim> => {
    if ((p as string) === 'decimal')
      return fc
        .integer({ min: 1, max: 38 })
        .chain((precision) => fc.integer({ min: 0, max: precision }).map((scale) => `decimal(${precision}, ${scale})` as Prim));
    if ((p as string) === 'fixed') return fc.integer({ min: 1, max: 24 }).map((n) => `fixed[${n}]` as Prim);
    return fc.constant(p);
  });

const NAME = fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/);

/** A schema type of `format` nested at most `depth` deep (protobuf: no list of lists, no map of lists or maps). */
export function typeArb(format: FuzzFormat, depth: number, inList = false): fc.Arbitrary<FType> {
  if (depth <= 0) return primArb(format);
  const proto = format === 'protobuf';
  const options: Array<fc.WeightedArbitrary<FType>> = [
    { weight: 6, arbitrary: primArb(format) },
    { weight: 1, arbitrary: structArb(format, depth - 1).map((fields): FType => ({ type: 'struct', fields })) },
  ];
  if (!(proto && inList))
    options.push({
      weight: 1,
      arbitrary: fc
        .record({ element: typeArb(format, depth - 1, true), elementRequired: fc.boolean() })
        .map((l): FType => ({ type: 'list', element: l.element, elementRequired: proto || l.elementRequired })),
    });
  if (!(proto && inList))
    options.push({
      weight: 1,
      arbitrary: fc
        .record({ value: proto ? primOrStruct(format, depth - 1) : typeArb(format, depth - 1), valueRequired: fc.boolean() })
        .map((m): FType => ({ type: 'map', value: m.value, valueRequired: proto || m.valueRequired })),
    });
  return fc.oneof(...options);
}

const primOrStruct = (format: FuzzFormat, depth: number): fc.Arbitrary<FType> =>
  depth <= 0
    ? primArb(format)
    : fc.oneof(
        primArb(format),
        structArb(format, depth - 1).map((fields): FType => ({ type: 'struct', fields })),
      );

/** 1 to 5 fields with unique names. */
export function structArb(format: FuzzFormat, depth: number, min = 1, max = 5): fc.Arbitrary<FField[]> {
  return fc
    .uniqueArray(NAME, { minLength: min, maxLength: max })
    .chain((names) =>
      fc.tuple(...names.map((name) => fc.record({ name: fc.constant(name), type: typeArb(format, depth), required: fc.boolean() }))),
    )
    .map((fs) => fs.map((f) => ({ ...f, required: format === 'protobuf' ? false : f.required })));
}

/** A partition field: a top-level primitive column and one transform its type takes. */
export interface FuzzPartition {
  column: string;
  transform: string;
}

const TRANSFORMS = ['identity', 'bucket', 'truncate', 'year', 'month', 'day', 'hour', 'void'] as const;

/** A partition spec over the top-level primitive columns: every transform their types allow (none: unpartitioned). */
export function partitionArb(fields: readonly FField[]): fc.Arbitrary<FuzzPartition[]> {
  const candidates: Array<fc.Arbitrary<FuzzPartition>> = [];
  for (const f of fields) {
    if (typeof f.type !== 'string') continue;
    for (const kind of TRANSFORMS) {
      const make =
        kind === 'bucket'
          ? fc.integer({ min: 1, max: 64 }).map((n) => `bucket[${n}]`)
          : kind === 'truncate'
            ? fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constant(3000), fc.constant(2 ** 31 - 1)).map((w) => `truncate[${w}]`)
            : fc.constant(kind);
      try {
        transformResultType(kind === 'bucket' ? 'bucket[1]' : kind === 'truncate' ? 'truncate[1]' : kind, f.type as PrimitiveType);
      } catch {
        continue;
      }
      candidates.push(make.map((transform) => ({ column: f.name, transform })));
    }
  }
  if (candidates.length === 0) return fc.constant([]);
  // one field per (column, transform): Iceberg refuses two fields of the same transform on one source
  return fc
    .uniqueArray(fc.oneof(...candidates), { maxLength: 3, selector: (p) => `${p.column}/${p.transform.replace(/\[.*/, '')}` })
    .map((ps) => ps);
}

// ---------- values ----------

/** Code points of every Unicode class a string must carry unchanged. */
const SPECIAL = [
  0x0, // NUL
  0x7f,
  0x85, // NEL
  0x301, // combining acute
  0x200d, // ZWJ
  0x202e, // RTL override
  0x5d0, // Hebrew alef
  0x627, // Arabic alef
  0xfeff, // BOM
  0xfdd0, // noncharacter
  0xfffe,
  0xffff,
  0xfffd, // the replacement character itself
  0x1f600, // astral emoji
  0x1f469,
  0x10ffff, // the last code point (noncharacter)
  0xe000, // private use
];
const specialChar = fc.constantFrom(...SPECIAL).map((c) => String.fromCodePoint(c));
const oneChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: specialChar },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
);

/** A well-formed string: short ones of every class, and now and then one of up to 64 KiB of UTF-8. */
export const stringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: fc.array(oneChar, { maxLength: 12 }).map((cs) => cs.join('')) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.array(oneChar, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1024, max: 65_536 })).map(([cs, bytes]) => {
      const unit = cs.join('');
      const s = unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
      // cut at a code point boundary under `bytes` of UTF-8
      let out = '';
      let n = 0;
      for (const ch of s) {
        const b = Buffer.byteLength(ch);
        if (n + b > bytes) break;
        out += ch;
        n += b;
      }
      return out;
    }),
  },
);

const bytesArb = (min: number, max: number): fc.Arbitrary<Uint8Array> =>
  fc.uint8Array({ minLength: min, maxLength: max }).map((b) => new Uint8Array(b));

const bigIntAround = (lo: bigint, hi: bigint, marks: bigint[]): fc.Arbitrary<bigint> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.bigInt({ min: lo, max: hi }) },
    { weight: 2, arbitrary: fc.bigInt({ min: -1000n > lo ? -1000n : lo, max: 1000n < hi ? 1000n : hi }) },
    { weight: 1, arbitrary: fc.constantFrom(...marks.filter((m) => m >= lo && m <= hi)) },
  );

/** A value of primitive `t` inside the domain `format` can carry. */
export function primValueArb(t: Prim, format: FuzzFormat): fc.Arbitrary<MV> {
  const jsonish = format === 'json' || format === 'json-schema';
  switch (t) {
    case 'boolean':
      return fc.boolean();
    case 'int':
      return fc.oneof(fc.integer(), fc.integer({ min: -100, max: 100 }), fc.constantFrom(INT_MIN, INT_MAX, 0, -1));
    case 'long':
      return bigIntAround(LONG_MIN, LONG_MAX, [LONG_MIN, LONG_MAX, 0n, -1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 31n]);
    case 'float':
      return fc.oneof(
        fc.float(),
        fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, Math.fround(3.4028234663852886e38), Math.fround(1.4e-45)),
      );
    case 'double':
      return fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, Number.MAX_VALUE, Number.MIN_VALUE, 0.1));
    case 'string':
      return stringArb;
    case 'binary':
      return fc.oneof({ weight: 10, arbitrary: bytesArb(0, 40) }, { weight: 1, arbitrary: bytesArb(1024, 65_536) });
    case 'uuid':
      return fc.uuid();
    case 'date':
      return jsonish
        ? fc.oneof(fc.integer({ min: ISO_MIN_DAYS, max: ISO_MAX_DAYS }), fc.constantFrom(ISO_MIN_DAYS, ISO_MAX_DAYS, 0, -1, 59, 11_016))
        : fc.oneof(fc.integer({ min: -800_000, max: 3_000_000 }), fc.constantFrom(INT_MIN, INT_MAX, 0, -1));
    case 'time':
      return fc.oneof(fc.bigInt({ min: 0n, max: MICROS_PER_DAY - 1n }), fc.constantFrom(0n, MICROS_PER_DAY - 1n));
    case 'timestamp':
    case 'timestamptz': {
      if (format === 'protobuf') return fc.bigInt({ min: PROTO_MIN_S * 1_000_000n, max: PROTO_MAX_S * 1_000_000n + 999_999n });
      // JSON also writes epoch millis: whole millis over the whole range, micros within ISO's years
      const isoRange = fc.bigInt({ min: BigInt(ISO_MIN_DAYS) * MICROS_PER_DAY, max: BigInt(ISO_MAX_DAYS + 1) * MICROS_PER_DAY - 1n });
      const wide = jsonish
        ? fc.bigInt({ min: LONG_MIN / 1000n, max: LONG_MAX / 1000n }).map((ms) => ms * 1000n)
        : bigIntAround(LONG_MIN, LONG_MAX, [LONG_MIN, LONG_MAX, 0n, -1n]);
      return fc.oneof({ weight: 3, arbitrary: isoRange }, { weight: 1, arbitrary: wide });
    }
    default: {
      const d = decimalOf(t);
      if (d) {
        const max = 10n ** BigInt(d.precision) - 1n;
        return bigIntAround(-max, max, [max, -max, 0n, 1n, -1n]);
      }
      const n = fixedOf(t)!;
      return bytesArb(n, n);
    }
  }
}

/** A value of `t`; `required` false lets null in. Nesting is bounded by the type. */
export function valueArb(t: FType, required: boolean, format: FuzzFormat): fc.Arbitrary<MV> {
  const v = ((): fc.Arbitrary<MV> => {
    if (typeof t === 'string') return primValueArb(t, format);
    switch (t.type) {
      case 'struct':
        return fc
          .tuple(...t.fields.map((f) => valueArb(f.type, f.required, format)))
          .map((vs) => Object.fromEntries(t.fields.map((f, i) => [f.name, vs[i]!])) as MV);
      case 'list':
        return fc.array(valueArb(t.element, t.elementRequired, format), { maxLength: 4 });
      case 'map':
        return fc
          .uniqueArray(fc.tuple(mapKeyArb, valueArb(t.value, t.valueRequired, format)), { maxLength: 4, selector: ([k]) => k })
          .map((es) => new MapValue(es));
    }
  })();
  return required ? v : fc.oneof({ weight: 4, arbitrary: v }, { weight: 1, arbitrary: fc.constant(null) });
}

/** Map keys: any string, "__proto__" and digits among them (a JS object orders integer keys first). */
const mapKeyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: stringArb.filter((s) => s.length < 40) },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', '1', '0', '') },
);

/** How a record is spoilt: none, or the kind of bad input the format's encoder writes (formats.ts). */
export type Spoil =
  | { kind: 'none' }
  /** the value of top-level field `field` replaced by a bad one of kind `bad` */
  | { kind: 'field'; field: string; bad: number }
  /** the message itself: truncated, garbage, empty, tombstone, wrong framing, invalid UTF-8 */
  | { kind: 'message'; bad: number; cut: number };

export const spoilArb = (fields: readonly FField[]): fc.Arbitrary<Spoil> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constant<Spoil>({ kind: 'none' }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('field' as const),
        field: fc.constantFrom(...fields.map((f) => f.name)),
        bad: fc.nat({ max: 1_000 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('message' as const),
        bad: fc.nat({ max: 1_000 }),
        cut: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
    },
  );

/** One fuzz case: a format, a table (its top-level fields), a partition spec, and records. */
export interface FuzzCase {
  format: FuzzFormat;
  fields: FField[];
  partitionBy: FuzzPartition[];
  records: Array<{ value: Record<string, MV>; spoil: Spoil }>;
}

export function caseArb(format: FuzzFormat, opts: { maxRecords: number; depth: number; minRecords?: number }): fc.Arbitrary<FuzzCase> {
  return structArb(format, opts.depth, 1, 6).chain((fields) =>
    fc.record({
      format: fc.constant(format),
      fields: fc.constant(fields),
      partitionBy: partitionArb(fields),
      records: fc.array(
        fc.record({
          value: valueArb({ type: 'struct', fields }, true, format) as fc.Arbitrary<Record<string, MV>>,
          spoil: spoilArb(fields),
        }),
        { minLength: opts.minRecords ?? 1, maxLength: opts.maxRecords },
      ),
    }),
  );
}
