"""A local Spark session with Iceberg's JdbcCatalog on floe's SQL catalogs, offline.

Runs with the `spark` profile's venv ($FLOE_HOME/spark/venv, `floe stack up --profile spark`), with
stack/py on PYTHONPATH. FLOE_SPARK_JARS (comma-separated absolute paths: Iceberg's Spark runtime and
the SQLite and Postgres JDBC drivers, stack/spark.ts sparkJars()) is passed as `spark.jars`, so
Spark never resolves `spark.jars.packages` from a repository at run time.

Usage:
    from floe_spark import session
    spark = session({"lite": {"uri": "jdbc:sqlite:/path/catalog.db", "warehouse": "file:///wh"}})
    spark.sql("CALL lite.system.rewrite_data_files(table => 'db.t')").collect()

Each key is a Spark catalog name, which is also the JdbcCatalog's `catalog_name` column: it must
equal the `name` floe's catalog was configured with to see floe's tables.
"""

import os

from pyspark.sql import SparkSession


def session(catalogs: dict, app: str = "floe-spark") -> SparkSession:
    jars = os.environ.get("FLOE_SPARK_JARS", "")
    if not jars:
        raise RuntimeError("FLOE_SPARK_JARS: expected the comma-separated jars of the spark profile, found nothing")
    b = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    )
    for name, c in catalogs.items():
        prefix = f"spark.sql.catalog.{name}"
        b = b.config(prefix, "org.apache.iceberg.spark.SparkCatalog").config(f"{prefix}.type", "jdbc")
        b = b.config(f"{prefix}.uri", c["uri"]).config(f"{prefix}.warehouse", c["warehouse"])
        for k, v in c.get("properties", {}).items():
            b = b.config(f"{prefix}.{k}", v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
