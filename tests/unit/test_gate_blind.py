"""The skill-blind baseline battery (gates/blind.py): answers written in the Oracle's format from the inputs alone,
and how they fare against a verifier. Pure functions; the Docker stage is covered in tests/docker."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

from skill2env_dagster.gates import blind
from skill2env_dagster.gates.mutants import Family
from skill2env_dagster.gates.outputs import OutputFile, OutputUnit
from skill2env_dagster.gates.sqlite_files import Edit, read_tables, rewritten


def _unit(path: str, text: str) -> OutputUnit:
    return OutputUnit(path, (OutputFile(path, text.encode()),))


def _unit_bytes(path: str, data: bytes) -> OutputUnit:
    return OutputUnit(path, (OutputFile(path, data),))


def _answers(units: list[OutputUnit], sources: list[blind.Source]) -> dict[str, dict[str, str]]:
    return {m.name: {p: d.decode() for p, d in m.writes} for m in blind.baselines(units, sources)}


def _ids(text: str) -> set[str]:
    return {r[0] for r in list(csv.reader(io.StringIO(text)))[1:] if r}


def _jaccard(want: set[str], got: set[str]) -> float:
    return len(want & got) / len(want | got) if want | got else 0.0


CASES = "\n".join(["id,note"] + [f"C-{i:03d},customer {'charged twice' if i % 3 == 0 else 'cannot log in'} today"
                                  for i in range(12)]) + "\n"
TABLE = "| Category | Signal words |\n|---|---|\n| Billing | charged twice, invoice |\n| Account | log in, password |\n"


def test_a_lookup_answered_by_a_reference_table_is_what_the_table_parser_finds() -> None:
    """The old table shapes: each case's answer is the row of a shipped table whose signal words it contains."""
    oracle = "id,category\n" + "".join(f"C-{i:03d},{'Billing' if i % 3 == 0 else 'Account'}\n" for i in range(12))
    sources = [blind.Source("/app/cases.csv", CASES), blind.Source("/app/docs/table.md", TABLE)]
    got = _answers([_unit("/app/out/answers.csv", oracle)], sources)["table_parser"]["/app/out/answers.csv"]
    assert got.splitlines()[0] == "id,category"  # the Oracle's own layout
    assert set(got.splitlines()[1:]) == set(oracle.splitlines()[1:])  # every answer right: the task would fail


def test_list_everything_names_every_row_under_every_label() -> None:
    oracle = "id,category\nC-000,Billing\nC-004,Account\n"
    sources = [blind.Source("/app/cases.csv", CASES)]
    got = _answers([_unit("/app/out/a.csv", oracle)], sources)["list_everything"]["/app/out/a.csv"]
    rows = list(csv.reader(io.StringIO(got)))[1:]
    assert {r[0] for r in rows} == {f"C-{i:03d}" for i in range(12)}
    assert len(rows) == 24  # 12 items x 2 labels


def test_file_answers_keep_the_oracles_path_form_and_line_counts_rank_them() -> None:
    sources = [blind.Source(f"/app/skills/s{i}/SKILL.md", "x\n" * (100 * i)) for i in range(1, 9)]
    sources.append(blind.Source("/app/README.md", "y\n" * 5000))  # not like the answers: another folder level
    oracle = json.dumps([{"skill": "skills/s8/SKILL.md", "lines": 800}, {"skill": "skills/s3/SKILL.md", "lines": 300}])
    got = _answers([_unit("/app/out/f.json", oracle)], sources)
    longest = json.loads(got["longest_quarter"]["/app/out/f.json"])
    assert [r["skill"] for r in longest] == ["skills/s8/SKILL.md", "skills/s7/SKILL.md"]
    assert [r["lines"] for r in longest] == [800, 700]  # numbers typed like the Oracle's
    every = {r["skill"] for r in json.loads(got["list_everything"]["/app/out/f.json"])}
    assert every == {f"skills/s{i}/SKILL.md" for i in range(1, 9)}


def test_a_rule_decided_answer_stays_below_the_threshold_for_every_baseline() -> None:
    """Breaches of per-priority deadlines: no column, word, count or table row tells them apart."""
    limits = {"P1": 1, "P2": 4}
    rows, breached = [], set()
    for i in range(16):
        prio = "P1" if i % 2 else "P2"
        hours = ([0.5, 0.75, 1.5, 0.25] if prio == "P1" else [2, 3.5, 5, 1])[(i // 2) % 4]
        start = 6 + i % 7  # opened at different hours: no clock time gives the late ones away
        end = start * 60 + int(hours * 60)
        rows.append(f"T-{i:03d},{prio},2026-03-02T{start:02d}:00:00Z,2026-03-02T{end // 60:02d}:{end % 60:02d}:00Z")
        if hours > limits[prio]:
            breached.add(f"T-{i:03d}")
    tickets = "id,priority,opened_at,first_response_at\n" + "\n".join(rows) + "\n"
    sources = [blind.Source("/app/queue/tickets.csv", tickets),
               blind.Source("/app/docs/sla.md", "| Priority | Respond within |\n|---|---|\n| P1 | 1 hour |\n"
                                                "| P2 | 4 hours |\n")]
    oracle = "ticket\n" + "".join(f"{t}\n" for t in sorted(breached))
    answers = _answers([_unit("/app/out/breaches.csv", oracle)], sources)
    assert {"list_everything", "table_parser", "first_column", "longest_half"} <= set(answers)
    for name, files in answers.items():
        got = files.get("/app/out/breaches.csv", "")
        assert _jaccard(breached, {ln.strip() for ln in got.splitlines()[1:]}) < blind.THRESHOLD, name


def test_grep_baselines_come_from_the_inputs_own_words() -> None:
    sources = [blind.Source(f"/app/logs/run{i}.log", ("status: done\n" if i % 2 else "status: aborted\n") * 3)
               for i in range(8)]
    oracle = "run\n/app/logs/run1.log\n/app/logs/run3.log\n"
    names = set(_answers([_unit("/app/out/r.csv", oracle)], sources))
    assert {"grep[done]", "grep_not[done]", "grep[aborted]"} <= names


def test_outputs_a_data_tool_cannot_write_are_emptied_and_modified_files_restored() -> None:
    sources = [blind.Source("/app/cases.csv", CASES)]
    program = OutputUnit("/app/bin/check.py", (OutputFile("/app/bin/check.py", b"#!/usr/bin/env python3\n", 0o755),))
    edited = OutputUnit("/app/cases.csv", (OutputFile("/app/cases.csv", b"changed\n", 0o644, CASES.encode()),))
    answer = _unit("/app/out/a.csv", "id,category\nC-000,Billing\nC-004,Account\n")
    mutants = blind.baselines([program, edited, answer], sources)
    assert mutants and all(m.family is Family.BLIND for m in mutants)
    for m in mutants:
        writes = dict(m.writes)
        assert writes["/app/bin/check.py"] == b""
        assert writes["/app/cases.csv"] == CASES.encode()


def test_judge_rejects_on_any_single_metric() -> None:
    assert blind.judge({"a": 0.1, "b": 0.5})[0]
    assert not blind.judge({"a": 0.49, "b": 0.0})[0]
    assert not blind.judge({})[0]


def test_sources_from_a_docker_archive_skip_binaries_and_caches() -> None:
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [("app/a.txt", b"hello\n"), ("app/b.bin", b"\0\1"), ("app/.git/x", b"y"),
                           ("app/docs/c.md", b"# c\n")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    got = blind.sources_from_tar(buf.getvalue(), ())
    assert [s.path for s in got] == ["/app/a.txt", "/app/docs/c.md"]


def test_a_count_answer_gets_the_counts_a_blind_tool_would_give() -> None:
    sources = [blind.Source("/app/data.txt", "widget,3\ngadget,5\nsprocket,2\n")]
    got = _answers([_unit("/app/answer.txt", "3\n")], sources)
    assert got["count[lines of /app/data.txt]"]["/app/answer.txt"] == "3\n"  # wc -l is the answer: rejected
    totals = _answers([_unit("/app/totals.json", '{"north": 12, "south": 4.5}')], sources)
    assert any(json.loads(files["/app/totals.json"]) == {"north": 3, "south": 3.0} for files in totals.values())


# --- SQLite deliverables and inputs (seen with a capable model: a triage written into a helpdesk mirror in place
# had its skill-blind battery skipped) -------------------------------------------------------------------------

SCHEMA = "CREATE TABLE tickets (id TEXT PRIMARY KEY, subject TEXT, status TEXT, category TEXT);"
OLD = [(f"T-{i:03d}", "customer charged twice" if i % 2 else "cannot log in", "triaged",
        "Billing" if i % 2 else "Account") for i in range(8)]
NEW = [(f"T-{i:03d}", "charged twice for May" if i % 2 else "cannot log in since reset", "new", None)
       for i in range(8, 12)]


def _db(rows: list[tuple]) -> bytes:
    con = sqlite3.connect(":memory:")
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO tickets VALUES (?, ?, ?, ?)", rows)
    con.commit()
    data = con.serialize()
    con.close()
    return data


def _rows(data: bytes) -> dict[str, tuple]:
    return {t.name: {r[0]: r for r in t.rows} for t in read_tables(data, 100)}["tickets"]


def test_a_database_edited_in_place_gets_the_battery_from_its_own_tables() -> None:
    """The signal words of a runbook table decide the category of each new ticket: the table parser joins them,
    as a generic tool would, and writes them into the database in place; nothing else of the file changes."""
    base = _db(OLD + NEW)
    oracle = _db(OLD + [(i, s, "triaged", "Billing" if "charged" in s else "Account") for i, s, _, _ in NEW])
    unit = OutputUnit("/app/helpdesk/queue.db", (OutputFile("/app/helpdesk/queue.db", oracle, 0o644, base),))
    sources = [*blind.db_sources("/app/helpdesk/queue.db", base), blind.Source("/app/helpdesk/RUNBOOK.md", TABLE)]
    assert next(s.path for s in sources) == "/app/helpdesk/queue.db#tickets.csv"
    got = {m.name: dict(m.writes)["/app/helpdesk/queue.db"] for m in blind.baselines([unit], sources)}
    parsed = _rows(got["table_parser"])
    assert {i: parsed[i][2:] for i, *_ in NEW} == {i: r[2:] for i, r in _rows(oracle).items() if i >= "T-008"}
    assert {i: parsed[i] for i, *_ in OLD} == {r[0]: r for r in OLD}  # rows it did not choose are untouched
    everything = _rows(got["list_everything"])
    assert {r[3] for r in everything.values()} == {"Billing"} or {r[3] for r in everything.values()} == {"Account"}


def test_a_database_the_oracle_creates_is_written_by_the_baselines_and_nothing_else_of_it_is_kept() -> None:
    oracle = _db(OLD)
    con = sqlite3.connect(":memory:")
    con.deserialize(oracle)
    con.executescript("CREATE TABLE secrets (answer TEXT); INSERT INTO secrets VALUES ('the expected answer');")
    con.commit()
    oracle = con.serialize()
    con.close()
    sources = [blind.Source("/app/cases.csv", "id,subject\n" + "".join(f"{r[0]},{r[1]}\n" for r in OLD + NEW))]
    got = {m.name: dict(m.writes)["/app/out.db"] for m in blind.baselines([_unit_bytes("/app/out.db", oracle)],
                                                                           sources)}
    tables = {t.name: t for t in read_tables(got["list_everything"], 1000)}
    assert {r[0] for r in tables["tickets"].rows} == {r[0] for r in OLD + NEW} and not tables["secrets"].rows


def test_an_sqlite_input_in_a_docker_archive_is_read_as_tables() -> None:
    import tarfile

    buf = io.BytesIO()
    data = _db(OLD)
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("app/queue.db")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (src,) = blind.sources_from_tar(buf.getvalue(), ())
    assert src.path == "/app/queue.db#tickets.csv" and src.text.splitlines()[:2] == [
        "id,subject,status,category", "T-000,cannot log in,triaged,Account"]


def test_a_hostile_database_is_not_a_crash() -> None:
    assert read_tables(b"SQLite format 3\x00" + b"\xff" * 600, 10) == []
    assert rewritten(b"SQLite format 3\x00garbage", [Edit("t", ({"a": 1},))]) is None
