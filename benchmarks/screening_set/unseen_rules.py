"""The tune-half figure the learned opinion's design was chosen on: rules and classifier both on unseen wording.

Cross-validation on the tune half combines out-of-fold probabilities with rules that were tuned on those very
skills, so it undervalues any opinion that overrules them. The tune half holds a fairer test: the tune entries of
the third and fifth labelling rounds were scored by the rule book of their day before any rule had read them. This
script rebuilds that situation: the rule book before the fourth tuning round (main at 032f497) screens the round-3
tune entries, the one before the fifth (42f0416) the round-5 tune entries, each from a `git archive` of that commit
in a temporary folder; the classifier is trained on the tune entries of the earlier rounds only. No test-half
entry is read. `--round6` does the same for the sixth labelling round's tune entries, screened by the rule book
of main when they were labelled (4b74797, no rule has read them), the classifier trained on rounds 1-5.

    .venv/bin/python benchmarks/screening_set/unseen_rules.py [--round6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import learned_opinion as lo
from evaluate import Item, load_items, screen_items

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EARLIER_RULES = {3: "032f497", 5: "42f0416"}  # main before the fourth / fifth tuning round
SIXTH_RULES = {6: "4b74797"}  # main when the sixth labelling round was labelled
GRID = tuple(lo.Combine(low, high, most) for low, high, most in (
    (None, .6, 1), (None, .7, 1), (.3, None, 99), (.4, None, 99), (.3, .7, 99), (.4, .6, 99), (.4, .7, 99),
    (.45, .55, 99), (.5, .5, 99), (.45, .65, 99), (.35, .65, 99))) + lo.ADD_ONLY  # the sixth round's, the seventh's
DUMP = """
import json, sys, yaml
sys.path.insert(0, "benchmarks/screening_set")
from evaluate import load_items, screen_items
ids = {e["id"] for e in yaml.safe_load(open("benchmarks/screening_set/entries.yaml")) if e.get("round") == ROUND}
items = [i for i in load_items("tune") if i.id in ids]
screen_items(items)
cl = ("needs_external_account", "needs_live_service")
print(json.dumps({i.id: {"got": sorted(i.got), "rules": sorted({f.rule.split("@")[0] for f in i.record.findings
                  if f.code.value in cl})} for i in items}))
"""


def earlier_verdicts(round_: int, commit: str) -> dict[str, dict]:
    """The verdicts of the rule book at `commit` on the round's tune entries (its own code, in a subprocess)."""
    return run_at(commit, DUMP.replace("ROUND", str(round_)))


def run_at(commit: str, script: str) -> Any:
    """Run `script` in a `git archive` of `commit` (today's entries and labels) and decode its last output line as
    JSON: the code of that day screens, not today's."""
    with tempfile.TemporaryDirectory(prefix="s2e-unseen-rules-") as tmp:
        tree = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=tree, check=True)
        for name in ("entries.yaml", "labels.yaml"):
            shutil.copy(HERE / name, Path(tmp) / "benchmarks" / "screening_set" / name)
        out = subprocess.run([sys.executable, "-c", script], cwd=tmp, check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": tmp})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--round6", action="store_true", help="the sixth labelling round instead of rounds 3 and 5")
    rules_of = SIXTH_RULES if ap.parse_args().round6 else EARLIER_RULES
    tune = load_items("tune")
    screen_items(tune, lo.RULES_ONLY)
    old: dict[str, dict] = {}
    for r, commit in rules_of.items():
        old.update(earlier_verdicts(r, commit))
    sim = [i for i in tune if i.id in old]
    for i in sim:
        i.got = frozenset(old[i.id]["got"])
    current = lo.cred_live_rules
    lo.cred_live_rules = lambda i: set(old[i.id]["rules"]) if i.id in old else current(i)  # the earlier rules' ids
    print(lo.HEADER)
    rounds = "+".join(map(str, rules_of))
    print(lo.fmt_row(f"earlier rules, rounds {rounds} tune (unseen)", lo.figures(sim, lambda i: i.got)))
    for design in lo.DESIGNS:
        pp: dict[str, float] = {}
        models: dict[str, lo.Model] = {}
        for r in rules_of:
            train: list[Item] = [i for i in tune if i.round < r]
            part = [i for i in sim if i.round == r]
            m = lo.Model(design).fit([lo.document(i) for i in train], np.array([lo.positive(i) for i in train]))
            pp.update(zip([i.id for i in part], m.proba([lo.document(i) for i in part]), strict=True))
            models.update({i.id: m for i in part})
        print(f"\n{design.name}, C={design.c}: trained on the earlier rounds' tune entries")
        print(lo.fmt_row("  classifier alone at 0.5", lo.figures(sim, lo.alone(pp))))
        for how in GRID:  # anchored rows require the crawl's evidence line, as the crawl does
            print(lo.fmt_row(f"  {how.label()}", lo.figures(sim, lo.with_opinion(pp, how, models if how.anchored
                                                                                 else None))))


if __name__ == "__main__":
    main()
