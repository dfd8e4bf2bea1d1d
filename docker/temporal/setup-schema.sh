#!/bin/sh
# One-shot job (docker-compose.yml service temporal-schema, image temporalio/admin-tools at the
# server's version): creates Temporal's two databases in the compose Postgres and brings their
# schemas to the version this server needs. Safe to re-run on every `docker compose up`: existing
# databases are kept, setup-schema -v 0.0 only creates the version tables, and update-schema applies
# only the versions not applied yet. Replaces what the deprecated auto-setup image did at start.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
PORT=${DB_PORT:-5432}
SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$PORT" -u "$POSTGRES_USER" "$@"
}

for db in temporal temporal_visibility; do
  case $db in
    temporal) dir=$SCHEMA_DIR/temporal/versioned ;;
    *) dir=$SCHEMA_DIR/visibility/versioned ;;
  esac
  # `create` fails when the database exists (a re-run); a real connection problem fails the next step.
  sql --db "$db" create || echo "database $db exists"
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema -d "$dir"
done
echo "temporal schema ready"
