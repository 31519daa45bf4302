"""SQLite databases as the gates' generic tools see them: tables of records, read and rewritten in memory.

A task's input or deliverable may be an SQLite file (a helpdesk mirror to triage in place, a warehouse to query).
The skill-blind baselines (gates/blind.py) read such an input as one table per SQL table and write such an output
the way a generic tool would (rows inserted, or columns updated in place). The bytes come from a task, so they are
opened as untrusted: in memory only (`deserialize`), `trusted_schema` off (no schema-defined function runs from a
trigger or view), cell sizes checked, and the work on each bounded by a progress handler.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAGIC = b"SQLite format 3\x00"
MAX_STEPS = 5_000_000  # SQLite virtual-machine steps per database opened before its work is interrupted


def is_sqlite(data: bytes | None) -> bool:
    return data is not None and data[: len(MAGIC)] == MAGIC


@dataclass(frozen=True)
class SqlTable:
    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def csv(self) -> str:
        """The table as `sqlite3 -csv -header` would print it (NULL as an empty cell)."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(self.columns)
        w.writerows(["" if v is None else v.hex() if isinstance(v, bytes) else v for v in r] for r in self.rows)
        return out.getvalue()


def _open(data: bytes) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    steps = [0]

    def bounded() -> int:
        steps[0] += 1
        return 1 if steps[0] > MAX_STEPS // 1000 else 0

    con.set_progress_handler(bounded, 1000)
    con.deserialize(data)
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("PRAGMA cell_size_check = ON")
    return con


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_tables(data: bytes, max_rows: int) -> list[SqlTable]:
    """The database's own tables (not SQLite's internal ones, not views), at most `max_rows` rows each; [] for a
    file that does not open as a database."""
    try:
        con = _open(data)
    except sqlite3.Error:
        return []
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                           "'sqlite_%' ORDER BY name")]
        out = []
        for name in names:
            cur = con.execute(f"SELECT * FROM {_q(name)} LIMIT ?", (max_rows,))
            out.append(SqlTable(name, tuple(d[0] for d in cur.description), tuple(cur.fetchall())))
        return out
    except sqlite3.Error:
        return []
    finally:
        con.close()


@dataclass(frozen=True)
class Edit:
    """What a generic tool does to one table: `rows` inserted after emptying it (`key` empty), or each row's
    columns updated where `key` equals the row's value of it."""

    table: str
    rows: tuple[dict[str, Any], ...]
    key: str = ""


def rewritten(data: bytes, edits: Iterable[Edit], cleared: Iterable[str] = ()) -> bytes | None:
    """The database with the edits applied (a row the database refuses is skipped, as it would be for the tool);
    None when the file does not open."""
    try:
        con = _open(data)
    except sqlite3.Error:
        return None
    try:
        for name in cleared:
            _try(con, f"DELETE FROM {_q(name)}", ())
        for e in edits:
            if not e.key:
                _try(con, f"DELETE FROM {_q(e.table)}", ())
            for r in e.rows:
                cols = [c for c in r if c != e.key]
                if e.key and cols:
                    _try(con, f"UPDATE {_q(e.table)} SET {', '.join(f'{_q(c)} = ?' for c in cols)} "
                              f"WHERE {_q(e.key)} = ?", (*[r[c] for c in cols], r[e.key]))
                elif not e.key and r:
                    _try(con, f"INSERT INTO {_q(e.table)} ({', '.join(map(_q, r))}) VALUES "
                              f"({', '.join('?' * len(r))})", tuple(r.values()))
        con.commit()
        return con.serialize()
    except sqlite3.Error:
        return None
    finally:
        con.close()


def _try(con: sqlite3.Connection, sql: str, values: tuple[Any, ...]) -> None:
    with contextlib.suppress(sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError):
        con.execute(sql, values)
