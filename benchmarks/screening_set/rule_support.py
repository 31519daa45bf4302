"""Which rules over-fire on wording they were not tuned on: tune-half support of every rule, and the findings the
rule book of the day reported on unseen tune entries that are eligible (or lack the code it gave them).

Rules fixed on the tune half's wording meet the targets there and miss them on unseen skills. Two tune-side views
show where, without reading a test-half skill:

- support: for every rule id, on how many tune skills it reports a finding, on how many of those the label holds
  the finding's code (precision), and on how many it is the only evidence of that code (it decides alone). A rule
  that fires on few skills, or on skills whose labels disagree, is fragile. `--raw CODE`: the same for every hit
  before scoring, including hits too weak to be reported alone.
- unseen: the rule book before the fourth / fifth tuning round (`unseen_rules.EARLIER_RULES`) on the round-3 /
  round-5 tune entries, skills it had never read; every finding it reported on an eligible skill, or for a code
  the label does not hold, with the current rules' findings of the same code beside it.

    .venv/bin/python benchmarks/screening_set/rule_support.py [--unseen] [--raw CODE] [--min-fp 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import CODES, Item, load_items, screen_items
from unseen_rules import EARLIER_RULES, run_at

from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.screen.engine import ScreenSettings
from skill2env_dagster.skillhub.screen.rules import DEFAULT_RULES_PATH

DUMP = """
import json, sys, yaml
sys.path.insert(0, "benchmarks/screening_set")
from evaluate import load_items, screen_items
ids = {e["id"] for e in yaml.safe_load(open("benchmarks/screening_set/entries.yaml")) if e.get("round") == ROUND}
items = [i for i in load_items("tune") if i.id in ids]
screen_items(items)
print(json.dumps({i.id: [[f.code.value, f.rule, f.file, f.line, f.text] for f in i.record.findings]
                  for i in items if i.record is not None}))
"""


def base_rule(rule: str) -> str:
    """`acct.x@needs_live_service` and `vocab.messaging.body` are reported under their rule / family kind."""
    return rule.split("@")[0]


def support(items: list[Item], min_fp: int) -> None:
    """Per rule id: skills it reports on, how many labels agree, how many it decides alone."""
    fired: dict[str, set[str]] = defaultdict(set)
    agree: dict[str, set[str]] = defaultdict(set)
    alone: dict[str, set[str]] = defaultdict(set)
    for i in items:
        findings = i.record.findings if i.record is not None else []
        by_code: dict[str, set[str]] = defaultdict(set)
        for f in findings:
            if f.code.value in i.got:
                by_code[f.code.value].add(base_rule(f.rule))
        for code, rules in by_code.items():
            for r in rules:
                fired[r].add(i.id)
                if code in i.labels:
                    agree[r].add(i.id)
                if len(rules) == 1:
                    alone[r].add(i.id)
    print(f"{'rule':48s} {'skills':>6s} {'agree':>6s} {'prec':>6s} {'alone':>6s}")
    for r in sorted(fired, key=lambda r: (len(agree[r]) / len(fired[r]), r)):
        fp = len(fired[r]) - len(agree[r])
        if fp >= min_fp:
            print(f"{r:48s} {len(fired[r]):6d} {len(agree[r]):6d} {100 * len(agree[r]) / len(fired[r]):5.0f}% "
                  f"{len(alone[r]):6d}")


def raw_support(items: list[Item], code: str) -> None:
    """Every hit of the code's rules before scoring (thresholds lowered to near zero in a copy of the rule book):
    on how many tune skills labelled with the code, and on how many not. Weak rules that never decide alone on the
    tune half still decide together on unseen wording."""
    book = yaml.safe_load(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    for spec in book["scoring"].values():
        spec["threshold"] = 1e-6
    with tempfile.TemporaryDirectory(prefix="s2e-rule-support-") as tmp:
        path = Path(tmp) / "rules.yaml"
        path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
        screen_items(items, CrawlSettings(screen=ScreenSettings(rules_path=str(path))))
    hits: dict[str, list[set[str]]] = defaultdict(lambda: [set(), set()])
    for i in items:
        for f in i.record.findings if i.record is not None else []:
            if f.code.value == code:
                hits[base_rule(f.rule)][code in i.labels].add(i.id)
    print(f"\nraw hits of {code} rules: {'rule':40s} {'labelled':>8s} {'not':>5s}")
    for r, (no, yes) in sorted(hits.items()):
        print(f"  {r:66s} {len(yes):8d} {len(no):5d}")


def earlier_findings(round_: int, commit: str) -> dict[str, list[list]]:
    """Every finding of the rule book at `commit` on the round's tune entries (its own code, in a subprocess)."""
    return run_at(commit, DUMP.replace("ROUND", str(round_)))


def unseen(items: list[Item]) -> None:
    """The earlier rule books' wrong findings on unseen tune entries, and what the current rules say there."""
    by_id = {i.id: i for i in items}
    wrong: dict[str, int] = defaultdict(int)
    for round_, commit in EARLIER_RULES.items():
        for sid, findings in earlier_findings(round_, commit).items():
            item = by_id[sid]
            bad = [f for f in findings if f[0] in CODES and f[0] not in item.labels]
            if not bad:
                continue
            codes = sorted({f[0] for f in bad})
            now = item.record.findings if item.record is not None else []
            print(f"\n{sid} (round {round_}, labels {sorted(item.labels) or 'eligible'}): earlier rules gave {codes}")
            print(f"    label note: {item.why}")
            for _code, rule, path, line, text in bad:
                wrong[base_rule(rule)] += 1
                print(f"    then {rule} {path}:{line} {text[:120]}")
            for f in now:
                if f.code.value in codes:
                    print(f"    now  {f.rule} {f.file}:{f.line} {f.text[:120]}")
            if not any(f.code.value in codes for f in now):
                print("    now  (no finding of these codes)")
    print("\nwrong findings of the earlier rules by rule id:")
    for r, n in sorted(wrong.items(), key=lambda x: -x[1]):
        print(f"  {r:48s} {n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unseen", action="store_true", help="also replay the earlier rule books on rounds 3 and 5")
    ap.add_argument("--raw", action="append", default=[], metavar="CODE",
                    help="also list every pre-threshold hit of this code's rules (labelled vs not)")
    ap.add_argument("--min-fp", type=int, default=1, help="list rules with at least this many disagreeing skills")
    args = ap.parse_args()
    items = load_items("tune")
    screen_items(items)
    support(items, args.min_fp)
    if args.unseen:
        unseen(items)
    for code in args.raw:
        raw_support(items, code)


if __name__ == "__main__":
    main()
