"""DuckDB with the iceberg, avro and httpfs extensions loaded offline.

The duckdb-extension-<name> wheels ship the binary extension at
<site-packages>/duckdb_extension_<name>/extensions/v<duckdb version>/<name>.duckdb_extension
(their __init__.py is empty and exposes no path). DuckDB would otherwise download extensions
from its own repository on INSTALL/autoload, which this machine cannot reach, so autoinstall and
autoload are switched off and each file is LOADed by absolute path. A DuckDB build loads only
extensions built for its exact version, hence the equal pins in stack/versions.ts.

Usage (the venv python runs with stack/py on PYTHONPATH, see stack/python.ts):
    from floe_duckdb import connect
    con = connect()                       # iceberg + avro + httpfs loaded, S3 secret set
    con.sql("SELECT count(*) FROM iceberg_scan('s3://floe/warehouse/db/t')").fetchall()
"""

import glob
import importlib.util
import os

import duckdb

DEFAULT_EXTENSIONS = ("avro", "httpfs", "iceberg")  # avro first: iceberg reads manifests with it


def extension_path(name: str) -> str:
    """Absolute path of the <name>.duckdb_extension file shipped by duckdb-extension-<name>."""
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"duckdb extension {name!r}: expected PyPI package duckdb-extension-{name} in this venv, found none")
    pkg_dir = os.path.dirname(spec.origin)
    version_dir = os.path.join(pkg_dir, "extensions", f"v{duckdb.__version__}")
    path = os.path.join(version_dir, f"{name}.duckdb_extension")
    if not os.path.exists(path):
        found = glob.glob(os.path.join(pkg_dir, "extensions", "*", f"{name}.duckdb_extension"))
        raise RuntimeError(
            f"duckdb extension {name!r}: expected {path} (duckdb {duckdb.__version__}), found {found or 'nothing'}"
        )
    return path


def s3_settings() -> dict:
    """S3 endpoint and credentials of the floe stack, from the FLOE_S3_* variables."""
    endpoint = os.environ.get("FLOE_S3_ENDPOINT", "http://127.0.0.1:8333")
    return {
        "endpoint": endpoint,
        "use_ssl": endpoint.startswith("https://"),
        "host": endpoint.split("://", 1)[-1].rstrip("/"),
        "region": os.environ.get("FLOE_S3_REGION", "us-east-1"),
        "key_id": os.environ.get("FLOE_S3_ACCESS_KEY", "floe"),
        "secret": os.environ.get("FLOE_S3_SECRET_KEY", "floe-secret"),
    }


def pyiceberg_s3_properties() -> dict:
    """The same S3 settings as PyIceberg FileIO properties (path-style, as SeaweedFS needs)."""
    s = s3_settings()
    return {
        "s3.endpoint": s["endpoint"],
        "s3.access-key-id": s["key_id"],
        "s3.secret-access-key": s["secret"],
        "s3.region": s["region"],
        "s3.path-style-access": "true",
    }


def connect(database: str = ":memory:", extensions=DEFAULT_EXTENSIONS, s3: bool = True) -> "duckdb.DuckDBPyConnection":
    """A DuckDB connection that never touches the network for extensions."""
    con = duckdb.connect(
        database,
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    for name in extensions:
        con.execute(f"LOAD '{extension_path(name)}'")
    if s3 and "httpfs" in extensions:
        s = s3_settings()
        con.execute(
            "CREATE OR REPLACE SECRET floe_s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?)"
            .replace("?", "{}")
            .format(*(_sql_literal(v) for v in (s["key_id"], s["secret"], s["region"], s["host"], s["use_ssl"])))
        )
    return con


def _sql_literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "'" + str(v).replace("'", "''") + "'"


if __name__ == "__main__":
    # `python -m floe_duckdb` prints the loaded extensions: a quick offline self-check.
    import json

    c = connect()
    rows = c.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded ORDER BY 1").fetchall()
    print(json.dumps({"duckdb": duckdb.__version__, "loaded": [r[0] for r in rows]}))
