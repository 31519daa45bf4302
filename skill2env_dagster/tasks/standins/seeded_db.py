"""Seeded SQLite stand-in: SQL text shipped in environment/, executed once at image build, then removed."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence


def sql_literal(value: object) -> str:
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def insert_sql(table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    values = ",\n".join("(" + ", ".join(sql_literal(v) for v in row) + ")" for row in rows)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n{values};\n"


def seeded_db(db_path: str, sql: str) -> tuple[dict[str, str], list[str]]:
    """(environment files, Dockerfile lines) that build `db_path` inside the image from `sql`."""
    build = (
        "RUN mkdir -p " + posixpath.dirname(db_path) + " && python3 -c \"import sqlite3; c = sqlite3.connect('"
        + db_path + "'); c.executescript(open('/tmp/seed.sql').read()); c.commit()\" && rm /tmp/seed.sql"
    )
    return {"seed.sql": sql}, ["COPY seed.sql /tmp/seed.sql", build]
