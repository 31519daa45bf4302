"""tests/check.py, assembled from the helpers and metrics a task actually needs.

A verifier is a short Python program run inside the task's image: it reads the solver's outputs, compares them with
/tests/expected.json and writes named metrics in [0, 1]. Its code is composed per task — a metric exists only when
the rule or difficulty pattern it grades is in play — so verifiers differ with the skill's rules, not only with
their data. Shared properties of every metric (the gates' mutation tests rely on them):
- an absent, empty or header-only output scores 0; nothing is credited for mere presence or format;
- finding lists are scored as multisets with Jaccard similarity (a duplicate or an extra line costs precision);
- a metric over one class of answers is scaled by `precision` (lines outside the class count against it);
- every value the solver reports (numbers included) takes part in some exact comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skill2env_dagster.gates.reward import MAX_METRICS

HEAD = '''"""Verifier: compares the outputs with /tests/expected.json and writes named metrics in [0, 1]."""
import json
import pathlib
from collections import Counter

REWARD = pathlib.Path("/logs/verifier/reward.json")
EXPECTED = json.loads(pathlib.Path("/tests/expected.json").read_text())


def emit(metrics):
    REWARD.parent.mkdir(parents=True, exist_ok=True)
    clean = {k: max(0.0, min(1.0, float(v))) for k, v in metrics.items()}
    REWARD.write_text(json.dumps(clean))
    print(json.dumps(clean))
'''

HELPERS: dict[str, str] = {
    "read_table": '''
def read_table(path, header):
    """Rows (tuples of stripped cells) of a delimited file whose first line is `header`; None otherwise."""
    p = pathlib.Path(path)
    if not p.is_file():
        return None
    lines = [ln.rstrip("\\r") for ln in p.read_text(errors="replace").splitlines()]
    lines = [ln for ln in lines if ln.strip()]
    if not lines or [c.strip().lower() for c in lines[0].split(SEP)] != [h.lower() for h in header]:
        return None
    return [tuple(c.strip() for c in ln.split(SEP)) for ln in lines[1:]]
''',
    "jaccard": '''
def jaccard(want, got):
    """Multiset Jaccard: shared / (wanted + reported - shared); duplicates and extras count against."""
    w, g = Counter(map(tuple, want)), Counter(map(tuple, got))
    shared = sum((w & g).values())
    union = sum((w | g).values())
    return shared / union if union and w else 0.0
''',
    "exact_rate": '''
def exact_rate(want, got):
    """Keys whose value is exactly right, over max(#wanted, #reported keys); a repeated key counts as wrong."""
    if not want or not got:
        return 0.0
    seen = Counter(k for k, _ in got)
    right = sum(1 for k, v in got if seen[k] == 1 and k in want and want[k] == v)
    return right / max(len(want), len(seen))
''',
    "precision": '''
def precision(keys, allowed):
    """Share of reported lines that are distinct expected keys. A metric over one class of answers is blind to
    lines outside its class, so it is scaled by this: listing every key under every answer, or inventing keys,
    earns nothing."""
    return len(set(keys) & set(allowed)) / len(keys) if keys else 0.0
''',
    "run_tool": '''
import os
import subprocess


def run_tool(argv, timeout=20, stdin_text=None):
    """stdout lines of the solver's program, or None when it is missing, fails or times out. A program without the
    exec bit is run with the interpreter its shebang names."""
    tool = argv[0]
    if not os.path.isfile(tool):
        return None
    if not os.access(tool, os.X_OK):
        first = open(tool, "rb").read(200).split(b"\\n", 1)[0].decode(errors="replace")
        if not first.startswith("#!"):
            return None
        argv = first[2:].split() + list(argv)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin_text)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [ln.rstrip("\\r") for ln in done.stdout.splitlines() if ln.strip()]
''',
    "read_json": '''
def read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return None
''',
}


@dataclass
class Metric:
    """One metric: its name, what it checks (for the blueprint and rubric), its function body and helpers."""

    name: str
    checks: str
    body: str  # statements of `def metric(out):` returning a float; `out` is what load() returned
    needs: tuple[str, ...] = ()
    predicates: list[str] = field(default_factory=list)
    # A refinement that re-grades a subset already graded by a required metric (a stratum, a rule group): dropped,
    # last first, when the task has more metrics than a reward may carry.
    optional: bool = False


@dataclass
class CheckScript:
    """A loader (code defining `load()`), constants, and the metrics in play."""

    loader: str
    metrics: list[Metric]
    constants: dict[str, str] = field(default_factory=dict)  # name -> Python literal
    loader_needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """At most MAX_METRICS metrics (the reward file's limit): every required one, then optional ones in order."""
        room = MAX_METRICS - sum(not m.optional for m in self.metrics)
        kept = [m for m in self.metrics if m.optional][: max(0, room)]
        self.metrics = [m for m in self.metrics if not m.optional or m in kept]

    def render(self) -> str:
        needed: list[str] = []
        for name in [*self.loader_needs, *(n for m in self.metrics for n in m.needs)]:
            if name not in needed:
                needed.append(name)
        parts = [HEAD]
        parts += [f"{k} = {v}" for k, v in self.constants.items()]
        parts += [HELPERS[n] for n in needed]
        parts.append(self.loader)
        for m in self.metrics:
            body = "\n".join("    " + ln if ln.strip() else "" for ln in m.body.strip("\n").splitlines())
            parts.append(f'\ndef metric_{m.name}(out):\n    """{m.checks}"""\n{body}\n')
        calls = ", ".join(f'"{m.name}": metric_{m.name}(out) if out is not None else 0.0' for m in self.metrics)
        parts.append(f"\nout = load()\nemit({{{calls}}})\n")
        return "\n".join(parts)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]


TEST_SH = """#!/bin/bash
# Verifier entry point: /tests/check.py writes the metrics; if it cannot run, every metric is 0. Python runs
# isolated and without site (-I -S): a .pth, sitecustomize or usercustomize the agent planted never runs in it.
mkdir -p /logs/verifier
if ! python3 -I -S /tests/check.py > /logs/verifier/check-stdout.txt 2>&1; then
  python3 -I -S -c 'import json, sys; print(json.dumps(dict.fromkeys(sys.argv[1:], 0)))' {names} \\
    > /logs/verifier/reward.json
fi
cat /logs/verifier/check-stdout.txt
"""


def test_sh(metrics: list[str]) -> str:
    return TEST_SH.format(names=" ".join(metrics))


def lowest_over(group: str, truth: str, rows: str, key: int, name: str, checks: str,
                predicates: list[str]) -> Metric:
    """A "lowest over rules" metric: for each group of items in EXPECTED[group] (the items planted to test one
    condition of the rule, or one rule of a set), the Jaccard of the true rows about those items with the reported
    ones (1 when none is true and none is reported), and the lowest of them. A reading that drops one condition, or
    one rule, scores 0 on the items planted for it however well it does elsewhere: an average over every item would
    pay it for the rest (blind review 2). The items planted for no condition are one more group, so rows about
    them (junk ids, wrong verdicts elsewhere) count too. `truth` and `rows` are expressions giving lists of rows; an
    item is a row's first `key` cells joined with '|'."""
    body = (f'def item(r):\n    return "|".join(map(str, r[:{key}]))\n'
            f'groups = [set(items) for items in EXPECTED["{group}"].values()]\n'
            'planted = set().union(*groups)\n'
            f'truth, rows = [list(r) for r in {truth}], [list(r) for r in {rows}]\n'
            'scores = []\n'
            'for items in groups:\n'
            '    want = [r for r in truth if item(r) in items]\n'
            '    got = [r for r in rows if item(r) in items]\n'
            '    scores.append(jaccard(want, got) if want else float(not got))\n'
            'rest_want = [r for r in truth if item(r) not in planted]\n'
            'rest_got = [r for r in rows if item(r) not in planted]\n'
            'scores.append(jaccard(rest_want, rest_got) if rest_want else float(not rest_got))\n'
            'return min(scores) if groups else 0.0')
    return Metric(name, checks, body, ("jaccard",), predicates)


def lowest_per_label(truth: str, rows: str, col: int, labels: str, name: str, checks: str,
                     predicates: list[str]) -> Metric:
    """A "lowest over rules" metric for outputs that name the rule of each row (a flag's label, a rule's id in
    column `col`): the lowest, over the labels in EXPECTED[labels], of the Jaccard of the true rows under that label
    with the reported ones (1 when none is true and none reported), times the share of reported rows under a known
    label. Every rule must be applied: one dropped, or applied with one condition less, scores that rule's Jaccard
    however well the others do."""
    body = (f'truth, rows = [list(r) for r in {truth}], [list(r) for r in {rows}]\n'
            'scores = []\n'
            f'for lab in EXPECTED["{labels}"]:\n'
            f'    want = [r for r in truth if r[{col}] == lab]\n'
            f'    got = [r for r in rows if r[{col}] == lab]\n'
            '    scores.append(jaccard(want, got) if want else float(not got))\n'
            f'known = sum(1 for r in rows if r[{col}] in EXPECTED["{labels}"])\n'
            'return min(scores) * (known / len(rows) if rows else 1.0) if scores else 0.0')
    return Metric(name, checks, body, ("jaccard",), predicates)
