"""Reader/writer oracle for floe's Iceberg tables: PyIceberg (through the same SQL catalog) and
DuckDB's iceberg extension (straight from a metadata.json location).

Usage: python iceberg_oracle.py <request.json>   ->   one JSON line on stdout.

Request: {"op": ..., "catalog": {"name", "uri", "warehouse"}, "table": "ns.name", ...}
  op "read"      -> rows (canonical, sorted), files (inspect.files), reference stats, snapshots
  op "duckdb"    -> rows (canonical, sorted) + count(*) via iceberg_scan(metadata_location)
  op "plan"      -> for each row filter string, the data file paths PyIceberg's plan_files keeps
  op "append"    -> appends `rows` (canonical input form, see to_arrow_column) in one snapshot
  op "count"     -> row count + sorted values of one column (concurrency checks)

Canonical value form, shared with test/oracles/canonical.ts (so rows compare as JSON):
  null -> null; boolean -> bool; int/long/date(days)/time(us)/timestamp*(us) -> decimal string;
  float/double -> "NaN" or the IEEE-754 float64 bits as 16 hex digits (exact, no repr quirks);
  decimal(P,S) -> unscaled integer as decimal string; string -> itself;
  uuid -> lowercase 8-4-4-4-12; fixed/binary -> lowercase hex.
Timestamps are cast to int64 in Arrow / epoch_us() in SQL before leaving the engine, so no
Python datetime with a time zone is ever built (the venv has no pytz).
"""

import datetime
import decimal
import json
import math
import struct
import sys
import uuid

EPOCH_DATE = datetime.date(1970, 1, 1)
DEC_CTX = decimal.Context(prec=200)


def canon(t: str, v):
    if v is None:
        return None
    if t == "boolean":
        return bool(v)
    if t in ("int", "long"):
        return str(int(v))
    if t == "date":
        return str((v - EPOCH_DATE).days if isinstance(v, datetime.date) else int(v))
    if t == "time":
        if isinstance(v, datetime.time):
            return str(((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond)
        return str(int(v))
    if t.startswith("timestamp"):
        if isinstance(v, datetime.datetime):
            raise TypeError(f"timestamp column reached Python as datetime ({v!r}); cast to int64 first")
        return str(int(v))
    if t in ("float", "double"):
        f = float(v)
        return "NaN" if math.isnan(f) else struct.pack(">d", f).hex()
    if t.startswith("decimal"):
        scale = int(t[t.index(",") + 1 : t.index(")")])
        d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
        u = d.scaleb(scale, DEC_CTX)
        if u != u.to_integral_value():
            raise ValueError(f"decimal {d} has more than {scale} fractional digits")
        return str(int(u))
    if t == "string":
        return str(v)
    if t == "uuid":
        if isinstance(v, uuid.UUID):
            return str(v)
        if isinstance(v, (bytes, bytearray)):
            return str(uuid.UUID(bytes=bytes(v)))
        return str(uuid.UUID(str(v)))
    if t == "binary" or t.startswith("fixed"):
        return bytes(v).hex()
    raise TypeError(f"no canonical form for type {t}")


def sort_rows(rows):
    return sorted(rows, key=lambda r: json.dumps(r))


def catalog(req):
    from pyiceberg.catalog.sql import SqlCatalog
    from floe_duckdb import pyiceberg_s3_properties

    c = req["catalog"]
    return SqlCatalog(c["name"], uri=c["uri"], warehouse=c["warehouse"], **pyiceberg_s3_properties())


def columns_of(tbl):
    return [(f.name, str(f.field_type)) for f in tbl.schema().fields]


def arrow_rows(arrow_table, columns):
    import pyarrow as pa

    cols = []
    for name, t in columns:
        col = arrow_table.column(name)
        if t.startswith("timestamp"):
            col = col.cast(pa.int64())
        cols.append([canon(t, v) for v in col.to_pylist()])
    return sort_rows([list(r) for r in zip(*cols)]) if cols else []


def reference_stats(tbl, path):
    """What PyIceberg itself would record for this Parquet file (footer stats + NaN counts from data)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )

    schema = tbl.schema()
    with tbl.io.new_input(path).open() as f:
        pf = pq.ParquetFile(f)
        stats = data_file_statistics_from_parquet_metadata(
            pf.metadata, compute_statistics_plan(schema, tbl.properties), parquet_path_to_id_mapping(schema)
        )
        data = pf.read()
    lower, upper = {}, {}
    for fid, agg in stats.column_aggregates.items():
        lo, hi = agg.min_as_bytes(), agg.max_as_bytes()  # truncated per the metrics mode
        if lo is not None:
            lower[str(fid)] = lo.hex()
        if hi is not None:
            upper[str(fid)] = hi.hex()
    nan = {}
    for field in schema.fields:
        if str(field.field_type) in ("float", "double"):
            col = data.column(field.name)
            nan[str(field.field_id)] = int(pc.sum(pc.is_nan(col)).as_py() or 0)
    return {
        "record_count": stats.record_count,
        "value_counts": {str(k): v for k, v in stats.value_counts.items()},
        "null_value_counts": {str(k): v for k, v in stats.null_value_counts.items()},
        "nan_value_counts": nan,
        "lower_bounds": lower,
        "upper_bounds": upper,
        "split_offsets": stats.split_offsets,
    }


def op_read(req):
    tbl = catalog(req).load_table(req["table"])
    columns = columns_of(tbl)
    out = {"metadata_location": tbl.metadata_location, "columns": columns}
    out["rows"] = arrow_rows(tbl.scan().to_arrow(), columns)
    out["files"] = files_of(tbl)
    if req.get("reference_stats"):
        for f in out["files"]:
            f["reference"] = reference_stats(tbl, f["file_path"])
    out["snapshots"] = snapshots_of(tbl)
    return out


def files_of(tbl):
    """Live data files as PyIceberg decodes them from our manifest list + manifests.

    Not `tbl.inspect.files()`: in PyIceberg 0.12 it fails on any table with a uuid column
    (readable_metrics builds a pa.uuid() extension column with from_pylist ->
    ArrowNotImplementedError: extension), independent of who wrote the table.
    """
    snap = tbl.current_snapshot()
    if snap is None:
        return []
    out = []
    for manifest in snap.manifests(tbl.io):
        for entry in manifest.fetch_manifest_entry(tbl.io, discard_deleted=True):
            f = entry.data_file
            part = f.partition
            out.append(
                {
                    "file_path": f.file_path,
                    "content": int(f.content),
                    "file_format": str(f.file_format.value if hasattr(f.file_format, "value") else f.file_format),
                    "spec_id": f.spec_id,
                    "record_count": f.record_count,
                    "file_size_in_bytes": f.file_size_in_bytes,
                    "partition": {pf.name: canon_partition(tbl, pf.name, part[i]) for i, pf in enumerate(tbl.specs()[f.spec_id].fields)},
                    "column_sizes": _counts(f.column_sizes),
                    "value_counts": _counts(f.value_counts),
                    "null_value_counts": _counts(f.null_value_counts),
                    "nan_value_counts": _counts(f.nan_value_counts),
                    "lower_bounds": _bounds(f.lower_bounds),
                    "upper_bounds": _bounds(f.upper_bounds),
                    "split_offsets": f.split_offsets,
                    "sequence_number": entry.sequence_number,
                    "file_sequence_number": entry.file_sequence_number,
                    "status": int(entry.status),
                }
            )
    return out


def _counts(m):
    return None if m is None else {str(k): int(v) for k, v in m.items()}


def _bounds(m):
    return None if m is None else {str(k): bytes(v).hex() for k, v in m.items()}


def canon_partition(tbl, name, v):
    """Partition values in the same canonical form (by the partition field's result type)."""
    spec = tbl.spec()
    schema = tbl.schema()
    for pf in spec.fields:
        if pf.name == name:
            t = str(pf.transform.result_type(schema.find_field(pf.source_id).field_type))
            if t.startswith("timestamp") and isinstance(v, datetime.datetime):
                raise TypeError("partition timestamp came back as datetime")
            return canon(t, v)
    raise KeyError(name)


def snapshots_of(tbl):
    m = tbl.metadata
    out = []
    for s in m.snapshots:
        summary = s.summary
        out.append(
            {
                "snapshot_id": str(s.snapshot_id),
                "parent_snapshot_id": None if s.parent_snapshot_id is None else str(s.parent_snapshot_id),
                "sequence_number": s.sequence_number,
                "operation": summary.operation.value if summary else None,
                "summary": dict(summary.additional_properties) if summary else {},
            }
        )
    cur = tbl.current_snapshot()
    return {"current": None if cur is None else str(cur.snapshot_id), "list": out}


def op_duckdb(req):
    from floe_duckdb import connect

    con = connect()
    loc = req["metadata_location"].replace("'", "''")
    columns = req["columns"]
    sel = []
    for name, t in columns:
        q = '"' + name.replace('"', '""') + '"'
        sel.append(f"epoch_us({q})" if t.startswith("timestamp") else q)
    src = f"iceberg_scan('{loc}')"
    count = con.execute(f"SELECT count(*) FROM {src}").fetchone()[0]
    raw = con.execute(f"SELECT {', '.join(sel)} FROM {src}").fetchall()
    rows = sort_rows([[canon(t, v) for (_, t), v in zip(columns, r)] for r in raw])
    out = {"count": count, "rows": rows}
    for label, sql in (req.get("queries") or {}).items():
        out.setdefault("queries", {})[label] = [list(map(_jsonable, r)) for r in con.execute(sql.replace("$SRC", src)).fetchall()]
    return out


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def op_plan(req):
    tbl = catalog(req).load_table(req["table"])
    out = {}
    for label, expr in req["filters"].items():
        out[label] = sorted(t.file.file_path for t in tbl.scan(row_filter=expr).plan_files())
    out["__all__"] = sorted(t.file.file_path for t in tbl.scan().plan_files())
    return out


def to_arrow_column(field, values):
    """Canonical input values -> a pyarrow array of the field's Arrow type."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    at = schema_to_pyarrow(field.field_type)
    t = str(field.field_type)
    if t.startswith("timestamp") or t == "time" or t == "date":
        base = pa.int32() if t == "date" else pa.int64()
        return pa.array([None if v is None else int(v) for v in values], base).cast(at)
    if t in ("int", "long"):
        return pa.array([None if v is None else int(v) for v in values], at)
    if t in ("float", "double"):
        return pa.array([None if v is None else (math.nan if v == "NaN" else struct.unpack(">d", bytes.fromhex(v))[0]) for v in values], at)
    if t.startswith("decimal"):
        scale = int(t[t.index(",") + 1 : t.index(")")])
        return pa.array([None if v is None else decimal.Decimal(int(v)).scaleb(-scale, DEC_CTX) for v in values], at)
    if t == "uuid":
        return pa.array([None if v is None else uuid.UUID(v).bytes for v in values], at)
    if t == "binary" or t.startswith("fixed"):
        return pa.array([None if v is None else bytes.fromhex(v) for v in values], at)
    return pa.array(values, at)


def op_append(req):
    import pyarrow as pa

    tbl = catalog(req).load_table(req["table"])
    fields = tbl.schema().fields
    rows = req["rows"]
    arrays = [to_arrow_column(f, [r.get(f.name) for r in rows]) for f in fields]
    arrow_schema = pa.schema([pa.field(f.name, a.type, nullable=not f.required) for f, a in zip(fields, arrays)])
    tbl.append(pa.Table.from_arrays(arrays, schema=arrow_schema), snapshot_properties=req.get("summary") or {})
    tbl = tbl.refresh()
    return {"metadata_location": tbl.metadata_location, "snapshot_id": str(tbl.current_snapshot().snapshot_id)}


def op_count(req):
    tbl = catalog(req).load_table(req["table"])
    col = req["column"]
    t = tbl.scan(selected_fields=(col,)).to_arrow()
    values = sorted(int(v) for v in t.column(col).to_pylist())
    return {"count": t.num_rows, "values": values, "snapshots": snapshots_of(tbl)}


OPS = {"read": op_read, "duckdb": op_duckdb, "plan": op_plan, "append": op_append, "count": op_count}

if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        request = json.load(fh)
    print(json.dumps(OPS[request["op"]](request)))
