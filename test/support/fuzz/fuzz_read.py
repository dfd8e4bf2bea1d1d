"""Reads fuzzed tables back through PyIceberg (an independent reader) in the fuzzer's canonical form.

Usage: python fuzz_read.py <request.json>   ->   one JSON line on stdout.

Request: {"catalog": {"name", "uri", "warehouse"}, "tables": [{"table", "dead", "offset"}]}
Answer:  {"tables": {<table>: {"rows": [[offset, {column: canon}]], "dead": [[offset, error]]}}}

Canonical form, as test/support/fuzz/model.ts `canon` makes it: null; bool; int/long/date (days)/
time (us)/timestamp* (us) as decimal strings; float/double as "NaN" or the float64 bits in hex;
decimal(P,S) as "<unscaled>e-<S>"; string as itself; binary/fixed/uuid as lowercase hex; struct as
an object by field name; list as a list; map as {"$map": [[key, value], ...]} sorted by key
(code point order).
Temporal values are cast to integers in Arrow first: Python's datetime cannot hold years past 9999.
"""

import json
import math
import struct
import sys
import uuid


def plain(t):
    """An Arrow type with every temporal type replaced by its integer storage (casts are exact)."""
    import pyarrow as pa

    if isinstance(t, pa.ExtensionType):
        return plain(t.storage_type)
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, plain(f.type), f.nullable) for f in t])
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, plain(t.value_type), t.value_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, plain(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field(t.key_field.name, plain(t.key_type), False), pa.field(t.item_field.name, plain(t.item_type), t.item_field.nullable))
    return t


def canon(t, v):
    from pyiceberg import types as it

    if v is None:
        return None
    if isinstance(t, it.StructType):
        return {f.name: canon(f.field_type, v.get(f.name)) for f in t.fields}
    if isinstance(t, it.ListType):
        return [canon(t.element_type, e) for e in v]
    if isinstance(t, it.MapType):
        entries = [[canon(t.key_type, k), canon(t.value_type, x)] for k, x in v]
        return {"$map": sorted(entries, key=lambda e: e[0])}
    if isinstance(t, it.BooleanType):
        return bool(v)
    if isinstance(t, (it.FloatType, it.DoubleType)):
        f = float(v)
        return "NaN" if math.isnan(f) else struct.pack(">d", f).hex()
    if isinstance(t, it.DecimalType):
        sign, digits, exp = v.as_tuple()
        u = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        if exp != -t.scale:
            u = u * 10 ** (exp + t.scale) if exp + t.scale >= 0 else None
        return f"{u}e{-t.scale}"
    if isinstance(t, it.StringType):
        return str(v)
    if isinstance(t, it.UUIDType):
        return v.hex if isinstance(v, uuid.UUID) else bytes(v).hex()
    if isinstance(t, (it.BinaryType, it.FixedType)):
        return bytes(v).hex()
    return str(int(v))


def keep_null_nested():
    """PyIceberg 0.12.0 reads a null list of structs as [] and a null map with struct values as {}.

    Its ArrowProjectionVisitor rebuilds those arrays with from_arrays(offsets, values) and drops the
    validity bitmap (pyiceberg/io/pyarrow.py, `list` and `map`). The Parquet files hold the nulls
    (pyarrow and DuckDB's read_parquet read them), so the same rebuild is done here with the mask.
    DuckDB 1.5.5's iceberg_scan reads the same nulls as [] too, which is why it is not the oracle.
    """
    import pyarrow as pa
    from pyiceberg.io import pyarrow as pyi

    visitor = pyi.ArrowProjectionVisitor
    original_map = visitor.map

    def list_(self, list_type, list_array, value_array):
        # the original, with the mask
        if isinstance(list_array, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)) and value_array is not None:
            list_initializer = pa.large_list if isinstance(list_array, pa.LargeListArray) else pa.list_
            if isinstance(value_array, pa.StructArray):
                list_array = pa.LargeListArray.from_arrays(list_array.offsets, value_array, mask=list_array.is_null())
            value_array = self._cast_if_needed(list_type.element_field, value_array)
            arrow_field = list_initializer(self._construct_field(list_type.element_field, value_array.type))
            return list_array.cast(arrow_field)
        return None

    def map_(self, map_type, map_array, key_result, value_result):
        out = original_map(self, map_type, map_array, key_result, value_result)
        if isinstance(map_array, pa.MapArray) and out is not None and map_array.null_count:
            return pa.MapArray.from_arrays(out.offsets, out.keys, out.items, type=out.type, mask=map_array.is_null())
        return out

    visitor.list = list_
    visitor.map = map_


def main():
    from pyiceberg.catalog.sql import SqlCatalog
    from floe_duckdb import pyiceberg_s3_properties

    keep_null_nested()
    req = json.load(open(sys.argv[1]))
    c = req["catalog"]
    cat = SqlCatalog(c["name"], uri=c["uri"], warehouse=c["warehouse"], **pyiceberg_s3_properties())
    out = {}
    for spec in req["tables"]:
        tbl = cat.load_table(spec["table"])
        scan = tbl.scan()
        # an empty scan goes through pyarrow's empty_table, which cannot build the uuid extension type
        data = scan.to_arrow() if any(True for _ in scan.plan_files()) else None
        if data is None:
            dead = cat.load_table(spec["dead"]).scan(selected_fields=("offset", "error")).to_arrow()
            out[spec["table"]] = {"rows": [], "dead": [[str(o), e] for o, e in zip(dead.column("offset").to_pylist(), dead.column("error").to_pylist())]}
            continue
        fields = tbl.schema().fields
        cols = {}
        for f in fields:
            col = data.column(f.name)
            cols[f.name] = col.cast(plain(col.type)).to_pylist()
        offset = spec["offset"]
        rows = []
        for i in range(data.num_rows):
            row = {f.name: canon(f.field_type, cols[f.name][i]) for f in fields if f.name != offset}
            rows.append([str(cols[offset][i]), row])
        dead = cat.load_table(spec["dead"]).scan(selected_fields=("offset", "error")).to_arrow()
        out[spec["table"]] = {
            "rows": rows,
            "dead": [[str(o), e] for o, e in zip(dead.column("offset").to_pylist(), dead.column("error").to_pylist())],
        }
    print(json.dumps({"tables": out}, ensure_ascii=False))


if __name__ == "__main__":
    main()
