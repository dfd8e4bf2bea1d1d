/**
 * Iceberg schema -> Arrow schema, with the Iceberg field id on every Arrow field as
 * `PARQUET:field_id` metadata. parquet-rs (inside parquet-wasm) turns that metadata into the
 * Parquet schema's `field_id`, which is how every Iceberg reader resolves columns (spec
 * "Parquet": "Columns are resolved by field id", never by name).
 *
 * Type mapping follows pyiceberg's `schema_to_pyarrow` and the spec's Parquet table, except that
 * strings/binary are 32-bit-offset Utf8/Binary (a batch never holds 2 GiB of one column here):
 *   boolean->Bool, int->Int32, long->Int64, float->Float32, double->Float64,
 *   decimal(P,S)->Decimal128(P,S), date->Date32(day), time->Time64(us),
 *   timestamp->Timestamp(us), timestamptz->Timestamp(us,'UTC'), timestamp(tz)_ns->(ns),
 *   string->Utf8, uuid->FixedSizeBinary(16), fixed[L]->FixedSizeBinary(L), binary->Binary,
 *   struct->Struct, list->List<element>, map->Map<entries<key,value>>.
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import { parseDecimalType, parseFixedType } from '../spec/conversions';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../spec/types';

/** The Arrow field metadata key parquet-rs / pyarrow map to the Parquet `field_id`. */
export const PARQUET_FIELD_ID_KEY = 'PARQUET:field_id';

const idMeta = (id: number): Map<string, string> => new Map([[PARQUET_FIELD_ID_KEY, String(id)]]);

/** Arrow type for an Iceberg type (nested element/key/value fields carry their ids). */
export function icebergToArrowType(type: IcebergType): arrow.DataType {
  if (typeof type === 'string') return primitiveToArrow(type);
  switch (type.type) {
    case 'struct':
      return new arrow.Struct(type.fields.map(icebergToArrowField));
    case 'list':
      // "element" is the child name both the spec's 3-level Parquet list and pyarrow use
      return new arrow.List(
        new arrow.Field('element', icebergToArrowType(type.element), !type['element-required'], idMeta(type['element-id'])),
      );
    case 'map': {
      const key = new arrow.Field('key', icebergToArrowType(type.key), false, idMeta(type['key-id']));
      const value = new arrow.Field('value', icebergToArrowType(type.value), !type['value-required'], idMeta(type['value-id']));
      // parquet-rs names the repeated group after this field: "key_value" as the spec's Parquet maps
      return new arrow.Map_(new arrow.Field('key_value', new arrow.Struct([key, value]), false) as never);
    }
  }
}

function primitiveToArrow(type: PrimitiveType): arrow.DataType {
  switch (type) {
    case 'boolean':
      return new arrow.Bool();
    case 'int':
      return new arrow.Int32();
    case 'long':
      return new arrow.Int64();
    case 'float':
      return new arrow.Float32();
    case 'double':
      return new arrow.Float64();
    case 'date':
      return new arrow.DateDay();
    case 'time':
      return new arrow.TimeMicrosecond();
    case 'timestamp':
      return new arrow.TimestampMicrosecond();
    case 'timestamptz':
      return new arrow.TimestampMicrosecond('UTC');
    case 'timestamp_ns':
      return new arrow.TimestampNanosecond();
    case 'timestamptz_ns':
      return new arrow.TimestampNanosecond('UTC');
    case 'string':
      return new arrow.Utf8();
    case 'uuid':
      return new arrow.FixedSizeBinary(16);
    case 'binary':
      return new arrow.Binary();
    default: {
      const dec = parseDecimalType(type);
      if (dec) {
        if (dec.precision > 38) throw new IcebergError('DataInvalid', `decimal precision: expected <= 38, found ${dec.precision}`);
        return new arrow.Decimal(dec.scale, dec.precision, 128);
      }
      const len = parseFixedType(type);
      if (len !== undefined) return new arrow.FixedSizeBinary(len);
      throw new IcebergError('FeatureUnsupported', `no Arrow mapping for Iceberg type ${String(type)}`);
    }
  }
}

export function icebergToArrowField(field: NestedField): arrow.Field {
  return new arrow.Field(field.name, icebergToArrowType(field.type), !field.required, idMeta(field.id));
}

export function icebergToArrowSchema(schema: Schema): arrow.Schema {
  return new arrow.Schema(schema.fields.map(icebergToArrowField));
}

/** The Iceberg field id an Arrow field carries, if any. */
export function fieldIdOf(field: arrow.Field): number | undefined {
  const raw = field.metadata.get(PARQUET_FIELD_ID_KEY);
  if (raw === undefined) return undefined;
  const id = Number(raw);
  return Number.isInteger(id) ? id : undefined;
}

/**
 * A leaf (primitive) column of an Iceberg schema in Parquet column order (depth-first), with the
 * facts metrics need: its id and type, its Parquet path (for matching footer column chunks), and
 * whether it sits under a list or map (repeated: per-value bounds are not kept for those, as in
 * Iceberg Java's ParquetMetrics).
 */
export interface LeafColumn {
  fieldId: number;
  type: PrimitiveType;
  /** dotted Iceberg name, e.g. `payload.user.id`, for per-column metrics config */
  name: string;
  parquetPath: string[];
  repeated: boolean;
}

export function leafColumns(schema: Schema): LeafColumn[] {
  const out: LeafColumn[] = [];
  const visit = (id: number, type: IcebergType, name: string, path: string[], repeated: boolean): void => {
    if (typeof type === 'string') {
      out.push({ fieldId: id, type, name, parquetPath: path, repeated });
      return;
    }
    switch (type.type) {
      case 'struct':
        for (const f of type.fields) visit(f.id, f.type, `${name}.${f.name}`, [...path, f.name], repeated);
        return;
      case 'list':
        // parquet-rs names the repeated group "list" for Arrow List (3-level layout)
        visit(type['element-id'], type.element, `${name}.element`, [...path, 'list', 'element'], true);
        return;
      case 'map':
        visit(type['key-id'], type.key, `${name}.key`, [...path, 'key_value', 'key'], true);
        visit(type['value-id'], type.value, `${name}.value`, [...path, 'key_value', 'value'], true);
        return;
    }
  };
  for (const f of schema.fields) visit(f.id, f.type, f.name, [f.name], false);
  return out;
}
