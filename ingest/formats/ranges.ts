/**
 * The values a column may hold: what the Parquet writer (iceberg/parquet/columns.ts, metrics.ts)
 * and the table's partition transforms (iceberg/spec/partition.ts: transform results, partition
 * paths, manifest bounds) accept. A value outside them is refused as one record's DecodeError
 * naming the column, the value and the range it missed, so it becomes a dead letter instead of
 * failing every retry of the batch.
 */
import { columnTypeString, type ColumnConfig, type PartitionFieldConfig } from '../../config/types';
import { parseTransform, transformResultType, parseDecimalType, type PrimitiveType } from '../../iceberg';
import { DecodeError, DecoderConfigError, show } from './errors';

export const INT_MIN = -(2 ** 31),
  INT_MAX = 2 ** 31 - 1;
export const LONG_MIN = -(2n ** 63n),
  LONG_MAX = 2n ** 63n - 1n;
const MICROS_PER_DAY = 86_400_000_000n;
const MICROS_PER_HOUR = 3_600_000_000n;
/** JS Date's range, which partition paths (day, hour, identity: Transform.toHumanString) go through: ±1e8 days. */
const DATE_DAYS = 100_000_000;

interface Range<T> {
  lo: T;
  hi: T;
  why: string;
}

/** Intersects `ranges`; on a miss, the first range that excludes the value explains why. */
export class Bounds<T extends number | bigint> {
  readonly lo: T;
  readonly hi: T;
  constructor(
    readonly col: string,
    readonly ranges: Array<Range<T>>,
  ) {
    this.lo = ranges.reduce((m, r) => (r.lo > m ? r.lo : m), ranges[0]!.lo);
    this.hi = ranges.reduce((m, r) => (r.hi < m ? r.hi : m), ranges[0]!.hi);
  }
  /** `x` when in range; `input` (or `shown`) is what the error names. */
  check(x: T, input: unknown, shown?: string): T {
    if (x >= this.lo && x <= this.hi) return x;
    const r = this.ranges.find((q) => x < q.lo || x > q.hi)!;
    throw new DecodeError(`${this.col}: ${shown ?? show(input)} is out of range for ${r.why}`);
  }
}

/** The smallest multiple of w at or above lo: truncate[w] floors to multiples of w, so anything below underflows. */
const ceilMultiple = (lo: bigint, w: bigint): bigint => {
  const q = lo / w;
  return (q * w < lo ? q + 1n : q) * w;
};

/** The partition transforms on column `c`, normalized; a DecoderConfigError for one its type does not allow. */
export function transformsOn(c: ColumnConfig, partitionBy: readonly PartitionFieldConfig[]): string[] {
  const out: string[] = [];
  for (const p of partitionBy) {
    if (p.column !== c.name) continue;
    try {
      // the config refuses partitions on a headers map or a nested type
      if (typeof c.type !== 'string') throw new Error('a partition source is a primitive column');
      transformResultType(p.transform, c.type as PrimitiveType);
    } catch (e) {
      throw new DecoderConfigError(
        `column ${c.name}: partition transform ${p.transform} cannot apply to type ${columnTypeString(c.type)} (${(e as Error).message})`,
      );
    }
    out.push(p.transform.trim().toLowerCase());
  }
  return out;
}

export function intBounds(c: ColumnConfig, transforms: string[]): Bounds<number> {
  const ranges: Array<Range<number>> = [{ lo: INT_MIN, hi: INT_MAX, why: 'a 32-bit int' }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: Number(ceilMultiple(BigInt(INT_MIN), BigInt(p.width))),
        hi: INT_MAX,
        why: `partition transform ${t} (the truncated value must fit a 32-bit int)`,
      });
  }
  return new Bounds(c.name, ranges);
}

export function longBounds(c: ColumnConfig, transforms: string[]): Bounds<bigint> {
  const ranges: Array<Range<bigint>> = [{ lo: LONG_MIN, hi: LONG_MAX, why: 'a 64-bit long' }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: ceilMultiple(LONG_MIN, BigInt(p.width)),
        hi: LONG_MAX,
        why: `partition transform ${t} (the truncated value must fit a 64-bit long)`,
      });
  }
  return new Bounds(c.name, ranges);
}

export function dateBounds(c: ColumnConfig, transforms: string[]): Bounds<number> {
  const ranges: Array<Range<number>> = [{ lo: INT_MIN, hi: INT_MAX, why: 'a date (32-bit days since 1970-01-01)' }];
  for (const t of transforms) {
    const k = parseTransform(t).kind;
    if (k === 'identity' || k === 'year' || k === 'month' || k === 'day') {
      ranges.push({
        lo: -DATE_DAYS,
        hi: DATE_DAYS,
        why: `partition transform ${t} (its partition value needs a date within ${DATE_DAYS} days of 1970-01-01)`,
      });
    }
  }
  return new Bounds(c.name, ranges);
}

/** Micros since 1970: int64 for the writer, narrower for transforms whose results are ints or dates. */
export function timestampBounds(c: ColumnConfig, transforms: string[]): Bounds<bigint> {
  const ranges: Array<Range<bigint>> = [{ lo: LONG_MIN, hi: LONG_MAX, why: 'a timestamp (64-bit microseconds since 1970)' }];
  const days = BigInt(DATE_DAYS);
  for (const t of transforms) {
    const k = parseTransform(t).kind;
    if (k === 'hour') {
      ranges.push({
        lo: BigInt(INT_MIN) * MICROS_PER_HOUR,
        hi: (BigInt(INT_MAX) + 1n) * MICROS_PER_HOUR - 1n,
        why: `partition transform ${t} (hours since 1970 must fit a 32-bit int)`,
      });
    } else if (k === 'year' || k === 'month' || k === 'day') {
      ranges.push({
        lo: -days * MICROS_PER_DAY,
        hi: (days + 1n) * MICROS_PER_DAY - 1n,
        why: `partition transform ${t} (its partition value needs a time within ${DATE_DAYS} days of 1970)`,
      });
    } else if (k === 'identity') {
      ranges.push({
        lo: -days * MICROS_PER_DAY,
        hi: days * MICROS_PER_DAY + 999n,
        why: `partition transform ${t} (its partition value needs a time within ${DATE_DAYS} days of 1970)`,
      });
    }
  }
  return new Bounds(c.name, ranges);
}

export function decimalBounds(c: ColumnConfig, precision: number, scale: number, transforms: string[]): Bounds<bigint> {
  const max = 10n ** BigInt(precision) - 1n;
  const ranges: Array<Range<bigint>> = [{ lo: -max, hi: max, why: `decimal(${precision}, ${scale}) (at most ${precision} digits)` }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: ceilMultiple(-max, BigInt(p.width)),
        hi: max,
        why: `partition transform ${t} (the truncated value must keep at most ${precision} digits)`,
      });
  }
  return new Bounds(c.name, ranges);
}

/**
 * The range check of a numeric column (what the writer and the column's partition transforms
 * take), for decoders that build the value themselves (Avro, Protobuf): returns the value, or
 * throws a DecodeError naming the column and `shown`. Undefined for types without a range.
 */
export function columnRange(
  c: ColumnConfig,
  partitionBy: readonly PartitionFieldConfig[] = [],
): ((x: number | bigint, shown: string) => number | bigint) | undefined {
  if (typeof c.type !== 'string') return undefined;
  const tr = transformsOn(c, partitionBy);
  const dec = parseDecimalType(c.type);
  const b: Bounds<number> | Bounds<bigint> | undefined =
    c.type === 'int'
      ? intBounds(c, tr)
      : c.type === 'long'
        ? longBounds(c, tr)
        : c.type === 'date'
          ? dateBounds(c, tr)
          : c.type === 'timestamp' || c.type === 'timestamptz'
            ? timestampBounds(c, tr)
            : dec
              ? decimalBounds(c, dec.precision, dec.scale, tr)
              : undefined;
  if (b === undefined) return undefined;
  return (x, shown) => (b as Bounds<number | bigint>).check(x, undefined, shown);
}
