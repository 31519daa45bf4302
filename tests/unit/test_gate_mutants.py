"""Mutant derivation and judging: pure functions over file contents, no Docker."""

from __future__ import annotations

import json

import pytest
import yaml

from skill2env_dagster.gates.mutants import (
    Family,
    Mutant,
    derive,
    judge,
    op_perturb,
    op_swap,
    parse,
    render,
    same_records,
)
from skill2env_dagster.gates.outputs import OutputFile, OutputUnit, Shape
from skill2env_dagster.reasons import ReasonCode

LIMIT = 1 << 20


def _unit(path: str, data: bytes, mode: int = 0o644) -> OutputUnit:
    return OutputUnit(path, (OutputFile(path, data, mode),))


def _by_name(units: list[OutputUnit]) -> dict[str, Mutant]:
    return {m.name: m for m in derive(units, LIMIT).mutants}


def _content(m: Mutant, path: str) -> bytes:
    return dict(m.writes)[path]


CSV = b"region,total\neast,9\nnorth,19\nsouth,5\nwest,5\n"
FINDINGS = b"a.conf\t3\tR1\nb.conf\t7\tR2\nc.conf\t9\tR3\nd.conf\t2\tR4\n"


def test_csv_gets_every_family():
    ms = _by_name([_unit("/app/t.csv", CSV)])
    assert {m: ms[m].family for m in ms} == {
        "empty": Family.TRIVIAL, "header_only": Family.TRIVIAL, "junk": Family.TRIVIAL, "superset": Family.TRIVIAL,
        "drop_half": Family.DESTRUCTIVE, "perturb_numbers": Family.DESTRUCTIVE, "swap_values[0]": Family.DESTRUCTIVE,
        "swap_values[1]": Family.DESTRUCTIVE,
        "reorder": Family.INFO, "duplicate": Family.INFO}
    assert _content(ms["header_only"], "/app/t.csv") == b"region,total\n"
    assert _content(ms["drop_half"], "/app/t.csv") == b"region,total\neast,9\nsouth,5\n"
    assert _content(ms["perturb_numbers"], "/app/t.csv") == b"region,total\neast,10\nnorth,20\nsouth,6\nwest,6\n"
    junk = _content(ms["junk"], "/app/t.csv").decode().splitlines()
    assert junk[0] == "region,total" and len(junk) == 5 and not set(junk[1:]) & set(CSV.decode().splitlines())
    superset = _content(ms["superset"], "/app/t.csv").decode().splitlines()
    assert superset[:5] == CSV.decode().splitlines() and len(superset) == 5 + 12  # 3x as many junk records


def test_swap_is_never_a_mere_reordering():
    # Swapping the rest between two lines that share it, or between identical lines, changes nothing.
    assert op_swap(parse("a.conf:3: R1\na.conf:3: R1\n", Shape.LINES), 1) is None
    doc = parse("east,9\nnorth,19\n", Shape.CSV)
    swapped = op_swap(doc, 1)
    assert swapped is not None and not same_records(swapped, doc)
    assert render(swapped) == b"east,19\nnorth,9\n"


def test_findings_list_without_header():
    ms = _by_name([_unit("/app/audit/findings.tsv", FINDINGS)])
    assert _content(ms["header_only"], "/app/audit/findings.tsv") == b"a.conf\t3\tR1\n"  # 1 of 4 records
    assert ms["header_only"].family is Family.TRIVIAL
    swaps = [m for m in derive([_unit("/app/audit/findings.tsv", FINDINGS)], LIMIT).mutants if m.group]
    assert [m.name for m in swaps] == ["swap_values[0]", "swap_values[1]", "swap_values[2]"]
    # Field 1 rotated: every finding now points at its neighbour's line.
    rotated = b"a.conf\t7\tR1\nb.conf\t9\tR2\nc.conf\t2\tR3\nd.conf\t3\tR4\n"
    assert _content(swaps[1], "/app/audit/findings.tsv") == rotated
    # Three records: keeping one is a third of the work, not a trivial output; the file is emptied instead.
    three = _by_name([_unit("/app/f.tsv", b"a\t3\tR1\nb\t7\tR2\nc\t9\tR3\n")])
    assert "header_only" not in three


def test_few_records_are_emptied_not_halved_in_the_trivial_mutant():
    ms = _by_name([_unit("/app/x.txt", b"alpha 1\nbeta 2\n")])
    assert "header_only" not in ms  # it would equal `empty`: skipped as such
    assert ms["drop_half"].family is Family.DESTRUCTIVE


def test_json_map_and_wrapper():
    ms = _by_name([_unit("/app/t.json", b'{"north": 13.0, "south": 5.0, "east": 7.0, "west": 1.0}\n')])
    assert json.loads(_content(ms["header_only"], "/app/t.json")) == {"north": 13.0}
    assert json.loads(_content(ms["swap_values[1]"], "/app/t.json")) == {"north": 5.0, "south": 7.0, "east": 1.0,
                                                                          "west": 13.0}
    assert "superset" not in ms  # extra keys in an object are no list-everything shortcut
    assert json.loads(_content(ms["perturb_numbers"], "/app/t.json")) == {"north": 20.5, "south": 8.5, "east": 11.5,
                                                                           "west": 2.5}
    wrapped = _by_name([_unit("/app/f.json", json.dumps(
        {"version": 1, "findings": [{"file": "a", "line": 3}, {"file": "b", "line": 7}, {"file": "c", "line": 9}]}
    ).encode())])
    dropped = json.loads(_content(wrapped["drop_half"], "/app/f.json"))
    assert dropped == {"version": 1, "findings": [{"file": "a", "line": 3}, {"file": "c", "line": 9}]}
    swapped = json.loads(_content(wrapped["swap_values[0]"], "/app/f.json"))["findings"]
    assert swapped == [{"file": "b", "line": 3}, {"file": "c", "line": 7}, {"file": "a", "line": 9}]


def test_yaml_records():
    text = yaml.safe_dump([{"name": n, "n": i} for i, n in enumerate("abcd", 1)]).encode()
    ms = _by_name([_unit("/app/o.yaml", text)])
    assert yaml.safe_load(_content(ms["header_only"], "/app/o.yaml")) == [{"name": "a", "n": 1}]
    assert [r["n"] for r in yaml.safe_load(_content(ms["perturb_numbers"], "/app/o.yaml"))] == [2, 3, 4, 5]


def test_code_gets_only_mutants_wrong_for_any_program():
    script = b"#!/bin/bash\nawk -F, '{ print $1 }' \"$1\"\n"
    result = derive([_unit("/app/bin/tool", script, 0o755)], LIMIT)
    assert {m.name for m in result.mutants} == {"empty", "junk"}
    junk = dict(result.mutants[1].writes)["/app/bin/tool"]
    assert junk.startswith(b"#!/bin/bash\n") and junk != script
    assert {s.name for s in result.skipped} >= {"drop_half", "perturb_numbers", "swap_values"}


def test_prose_gets_only_trivial_mutants():
    ms = _by_name([_unit("/app/report.md", b"# Report\n\nWe found 3 issues.\n\nFix them by Friday.\n")])
    assert {m.family for m in ms.values()} == {Family.TRIVIAL}


def test_tree_mutants_and_relevance_runs():
    tree = OutputUnit("/app/out", (OutputFile("/app/out/a.csv", b"item,qty\nbolt,3\ngear,1\nnut,5\n"),
                                   OutputFile("/app/out/b.csv", b"item,qty\nnut,10\n")), is_tree=True)
    other = _unit("/app/notes.md", b"# Done\n")
    result = derive([tree, other], LIMIT)
    labels = {m.label: m for m in result.mutants}
    assert labels["delete_file:/app/out"].deletes == ("/app/out/a.csv",)  # the largest file
    superset = dict(labels["superset"].writes)  # list everything in the lists, nothing else
    assert superset["/app/notes.md"] == b"" and superset["/app/out/a.csv"].startswith(b"item,qty\nbolt,3\n")
    assert labels["unit_empty:/app/out"].family is Family.RELEVANCE
    assert labels["unit_empty:/app/notes.md"].family is Family.RELEVANCE
    assert dict(labels["empty"].writes) == {"/app/out/a.csv": b"", "/app/out/b.csv": b"", "/app/notes.md": b""}


def test_destructive_mutants_leave_the_records_the_image_already_had():
    """A state file the Oracle extended: seed records stay, only the Oracle's records are dropped or changed."""
    seed = [{"id": "R-1", "sku": "A", "qty": 1}, {"id": "R-2", "sku": "B", "qty": 2}]
    mine = [{"id": "R-3", "sku": "C", "qty": 3}, {"id": "R-4", "sku": "D", "qty": 4}]
    base = json.dumps({"records": seed}).encode()
    data = json.dumps({"records": seed + mine}).encode()
    unit = OutputUnit("/var/lib/stub/state.json", (OutputFile("/var/lib/stub/state.json", data, 0o644, base),))
    ms = _by_name([unit])
    dropped = json.loads(_content(ms["drop_half"], "/var/lib/stub/state.json"))["records"]
    assert dropped == [*seed, mine[0]]
    swapped = json.loads(_content(ms["swap_values[1]"], "/var/lib/stub/state.json"))["records"]
    assert swapped[:2] == seed and {r["sku"] for r in swapped[2:]} == {"C", "D"} and swapped[2]["sku"] == "D"
    perturbed = json.loads(_content(ms["perturb_numbers"], "/var/lib/stub/state.json"))["records"]
    assert perturbed[:2] == seed and [r["qty"] for r in perturbed[2:]] == [4, 5]


def test_oversized_and_binary_files_are_only_emptied():
    big = _unit("/app/big.csv", b"a,1\n" * 100)
    result = derive([big], max_bytes=64)
    assert {m.name for m in result.mutants} == {"empty", "junk"}  # opaque: emptied, or random bytes of its size


def test_nothing_to_mutate():
    assert derive([], LIMIT).mutants == []
    result = derive([_unit("/app/empty.txt", b"")], LIMIT)
    assert result.mutants == [] and "every output is already empty" in [s.why for s in result.skipped]


def test_perturb_keeps_width_and_dates_change():
    doc = parse("2024-01-05 007 x1 v2.5\n", Shape.LINES)
    assert render(op_perturb(doc)) == b"2025-02-06 008 x1 v2.5\n"


ORACLE = {"rows": 1.0, "layout": 1.0}


@pytest.mark.parametrize(
    ("family", "metrics", "ungraded", "failed", "reason"),
    [
        (Family.TRIVIAL, {"rows": 1.0, "layout": 0.0}, False, False, None),  # mean 0.5 is not above 0.5
        (Family.TRIVIAL, {"rows": 1.0, "layout": 0.1}, False, True, ReasonCode.SHORTCUT_PASSED),
        (Family.TRIVIAL, {}, False, False, None),  # no usable reward counts as 0
        (Family.DESTRUCTIVE, {"rows": 1.0, "layout": 1.0}, False, True, ReasonCode.VERIFIER_INSENSITIVE),
        (Family.DESTRUCTIVE, {"rows": 0.9, "layout": 1.0}, False, False, None),
        (Family.DESTRUCTIVE, {"rows": 1.0, "layout": 1.0}, True, False, None),  # output not graded: information
        (Family.DESTRUCTIVE, {"other": 1.0}, False, False, None),  # different metric names: not comparable
        (Family.INFO, {"rows": 1.0, "layout": 1.0}, False, False, None),
    ],
)
def test_judge(family, metrics, ungraded, failed, reason):
    j = judge(Mutant("m", family, "d"), metrics, ORACLE, 0.5, ungraded)
    assert (j.failed, j.reason) == (failed, reason)


# --- outputs with several lists: trivial mutants cut them all, destructive ones one at a time -------------------

FUNNEL = {
    "period": "2024-Q1",
    "totals": {"signups": 120, "activated": 48, "rate": 0.4},
    "by_channel": [{"channel": c, "signups": s, "activated": a}
                   for c, s, a in [("ads", 40, 10), ("seo", 30, 15), ("email", 25, 12), ("social", 15, 6),
                                   ("referral", 10, 5)]],
    "top_channels": ["seo", "email", "referral", "ads"],
    "anomalies": [{"day": d, "channel": c, "z": z}
                  for d, c, z in [("2024-01-05", "ads", 3.2), ("2024-02-11", "seo", -2.9),
                                  ("2024-03-02", "email", 3.5), ("2024-03-20", "social", 2.7)]],
    "cohorts": [{"week": f"2024-W0{i}", "retained": r} for i, r in enumerate([0.5, 0.42, 0.38, 0.35, 0.31, 0.3], 1)],
}
REPORT = "/app/report.json"


def _f1(got: list, want: list) -> float:
    got_set, want_set = {json.dumps(x, sort_keys=True) for x in got}, {json.dumps(x, sort_keys=True) for x in want}
    hits = len(got_set & want_set)
    return 2 * hits / (len(got_set) + len(want_set)) if got_set or want_set else 1.0


def _funnel_verifier(files: dict[str, bytes], sections=("totals", "by_channel", "top_channels", "anomalies",
                                                         "cohorts")) -> dict[str, float]:
    """An honest verifier of a five-section answer: one metric per section (F1 of a list's records, share of the
    totals right), each an independent check, as in the task the issue lost."""
    try:
        got = json.loads(files.get(REPORT, b""))
    except ValueError:
        return dict.fromkeys(sections, 0.0)
    if not isinstance(got, dict):
        return dict.fromkeys(sections, 0.0)
    out = {}
    for s in sections:
        want, have = FUNNEL[s], got.get(s)
        if isinstance(want, dict):
            have = have if isinstance(have, dict) else {}
            out[s] = sum(have.get(k) == v for k, v in want.items()) / len(want)
        else:
            out[s] = _f1(have if isinstance(have, list) else [], want)
    return out


def _apply(m: Mutant, files: dict[str, bytes]) -> dict[str, bytes]:
    return {**{p: d for p, d in files.items() if p not in m.deletes}, **dict(m.writes)}


def _judged(units: list[OutputUnit], verifier) -> dict[str, tuple[float, bool]]:
    """{mutant label: (mean, rejected)} for every mutant, swap groups judged together as robustness does."""
    files = {f.path: f.data for u in units for f in u.files}
    oracle = verifier(files)
    assert all(v == 1.0 for v in oracle.values())
    ms = derive(units, LIMIT).mutants
    judged = {}
    for m in ms:
        metrics = verifier(_apply(m, files))
        judged[m.label] = (sum(metrics.values()) / len(metrics), judge(m, metrics, oracle, 0.5).failed)
    for group in {m.group for m in ms if m.group}:
        members = [m.label for m in ms if m.group == group]
        if not all(judged[label][1] for label in members):
            judged.update({label: (judged[label][0], False) for label in members})
    return judged


def test_trivial_mutants_cut_every_list_of_a_json_answer_at_once():
    unit = _unit(REPORT, json.dumps(FUNNEL, indent=2).encode())
    ms = _by_name([unit])
    cut = json.loads(_content(ms["header_only"], REPORT))
    assert cut == {"period": "", "totals": {"signups": 0, "activated": 0, "rate": 0.0},
                   "by_channel": FUNNEL["by_channel"][:1], "top_channels": ["seo"],
                   "anomalies": FUNNEL["anomalies"][:1], "cohorts": FUNNEL["cohorts"][:1]}
    junk = json.loads(_content(ms["junk"], REPORT))
    assert junk.keys() == FUNNEL.keys() and junk["totals"].keys() == FUNNEL["totals"].keys()
    for key in ("by_channel", "top_channels", "anomalies", "cohorts"):
        assert len(junk[key]) == len(FUNNEL[key]) and not set(map(json.dumps, junk[key])) & set(
            map(json.dumps, FUNNEL[key])), key
    assert all(junk["totals"][k] != v for k, v in FUNNEL["totals"].items()) and junk["period"] != FUNNEL["period"]
    sup = json.loads(_content(ms["superset"], REPORT))
    for key in ("by_channel", "top_channels", "anomalies", "cohorts"):
        assert sup[key][:len(FUNNEL[key])] == FUNNEL[key] and len(sup[key]) == 4 * len(FUNNEL[key]), key
    assert sup["totals"] == {"signups": 0, "activated": 0, "rate": 0.0} and sup["period"] == ""


def test_an_honest_five_section_verifier_is_no_longer_rejected():
    """The issue's case: one metric per section. Cutting one list and leaving four right scored a mean near 0.8
    (shortcut_passed); a no-work output cuts all five, and every section's own sensitivity mutants are noticed."""
    unit = _unit(REPORT, json.dumps(FUNNEL, indent=2).encode())
    one_list_cut = {**FUNNEL, "by_channel": FUNNEL["by_channel"][:1]}  # what header_only used to write
    old = _funnel_verifier({REPORT: json.dumps(one_list_cut).encode()})
    assert sum(old.values()) / len(old) > 0.77
    judged = _judged([unit], _funnel_verifier)
    assert not [label for label, (_, rejected) in judged.items() if rejected], judged
    for name in ("header_only", "junk", "superset"):
        assert judged[name][0] <= 0.5, (name, judged[name])
    sections = {label.split("#")[1] for label in judged if "#" in label}
    assert sections == {"by_channel", "top_channels", "anomalies", "cohorts"}  # each list a target of its own
    assert "drop_half:/app/report.json#cohorts" in judged and "perturb_numbers:/app/report.json#anomalies" in judged


def test_a_verifier_that_grades_one_section_of_five_is_caught_by_the_other_sections_mutants():
    """No trivial mutant catches it (they cut the graded section too), but dropping half of a section the
    verifier never reads, or changing its numbers, keeps the Oracle's reward: verifier_insensitive."""
    unit = _unit(REPORT, json.dumps(FUNNEL, indent=2).encode())
    judged = _judged([unit], lambda files: _funnel_verifier(files, sections=("by_channel",)))
    rejected = {label for label, (_, failed) in judged.items() if failed}
    assert not any(judged[name][1] for name in ("empty", "header_only", "junk", "superset"))
    assert {"drop_half:/app/report.json#cohorts", "perturb_numbers:/app/report.json#anomalies",
            "drop_half:/app/report.json#top_channels"} <= rejected, rejected
    assert not any(label.endswith("#by_channel") for label in rejected)
    ms = {m.label: m for m in derive([unit], LIMIT).mutants}
    assert ms["drop_half:/app/report.json#cohorts"].family is Family.DESTRUCTIVE
    dropped = json.loads(_content(ms["drop_half:/app/report.json#cohorts"], REPORT))
    assert dropped["cohorts"] == FUNNEL["cohorts"][::2] and dropped["by_channel"] == FUNNEL["by_channel"]


def test_one_list_json_keeps_its_labels_and_yaml_sections_are_cut_together():
    wrapped = {m.label for m in derive([_unit("/app/f.json", json.dumps(
        {"version": 1, "findings": [{"file": "a", "line": 3}, {"file": "b", "line": 7}]}).encode())], LIMIT).mutants}
    assert "drop_half:/app/f.json" in wrapped and not any("#" in label for label in wrapped)
    text = yaml.safe_dump({"owner": "ops", "hosts": [f"h{i}" for i in range(8)],
                           "ports": [{"port": p, "proto": "tcp"} for p in (22, 80, 443, 8080)]}).encode()
    ms = _by_name([_unit("/app/inv.yaml", text)])
    assert yaml.safe_load(_content(ms["header_only"], "/app/inv.yaml")) == {
        "owner": "", "hosts": ["h0"], "ports": [{"port": 22, "proto": "tcp"}]}


def test_trivial_mutants_change_every_output_file_together():
    """Several outputs (two CSVs, a JSON answer, a note): each trivial mutant writes all of them at once."""
    units = [_unit("/app/out/a.csv", CSV), _unit("/app/out/b.tsv", FINDINGS),
             _unit(REPORT, json.dumps(FUNNEL).encode()), _unit("/app/notes.md", b"# Notes\n\nAll done.\n")]
    ms = _by_name(units)
    every = {u.root for u in units}
    for name in ("empty", "junk", "superset"):
        assert {p for p, _ in ms[name].writes} == every, name
    assert {p for p, _ in ms["header_only"].writes} == every
    assert dict(ms["header_only"].writes)["/app/notes.md"] == b""  # prose has no records to keep


def test_only_the_largest_lists_of_a_json_output_are_mutated_one_at_a_time():
    """Each list targeted alone costs verifier runs: the six largest are, the rest only by the trivial mutants."""
    doc = {f"s{i}": [{"k": j, "v": i * j} for j in range(10 - i)] for i in range(8)}
    result = derive([_unit(REPORT, json.dumps(doc).encode())], LIMIT)
    targeted = {m.section for m in result.mutants if m.family is Family.DESTRUCTIVE}
    assert targeted == {f"s{i}" for i in range(6)}
    assert [s.why for s in result.skipped if s.name == "destructive"] == [
        "2 smaller lists not mutated one at a time (the 6 largest of each output are)"]
    cut = json.loads(dict(next(m for m in result.mutants if m.name == "header_only").writes)[REPORT])
    assert cut == {f"s{i}": doc[f"s{i}"][:1] if len(doc[f"s{i}"]) >= 4 else [] for i in range(8)}
