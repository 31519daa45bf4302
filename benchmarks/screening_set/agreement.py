"""Inter-annotator agreement of the screening set's hand labels (README.md > Label agreement).

`--sample N` prints a deterministic sample of N entries, N/2 from each half, chosen by a salted hash of the id
(never by the labels), as YAML id/repo/commit/path: the list a second labeller labels blind.
`--score FILE` compares that second labelling (labels.yaml's format: id, codes, why) with labels.yaml and prints,
per half and overall, agreement on eligible vs screened out, per reason code, and on "credentials or live"
(needs_external_account or needs_live_service), each as counts and Cohen's kappa.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate import CODES, CRED_OR_LIVE, load_items
from select_skills import ENTRIES_FILE

SALT = "agreement-2026-12"
HALVES = ("tune", "test")


def sample(entries: Sequence[dict], n: int, salt: str = SALT) -> list[dict]:
    """n // 2 entries of each half (the tune half takes the odd one), the lowest SHA-256(salt + id) first."""
    def key(e: dict) -> str:
        return hashlib.sha256((salt + e["id"]).encode()).hexdigest()
    picked: list[dict] = []
    for k, half in enumerate(HALVES):
        want = n // 2 + (n % 2 if k == 0 else 0)
        picked += sorted((e for e in entries if e["half"] == half), key=key)[:want]
    return picked


def kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two yes/no labellings; None when undefined (both labellers gave one same answer only)."""
    if not first:
        return None
    if len(set(first) | set(second)) == 1:
        return None
    return float(cohen_kappa_score(list(first), list(second)))


@dataclass
class Agreement:
    what: str
    n: int
    both: int
    only_first: int
    only_second: int
    kappa: float | None

    @property
    def percent(self) -> float:
        return 100.0 * (self.n - self.only_first - self.only_second) / self.n if self.n else 0.0

    def line(self) -> str:
        k = "   n/a" if self.kappa is None else f"{self.kappa:6.2f}"
        return (f"  {self.what:24} both {self.both:3}  only first {self.only_first:3}  only second "
                f"{self.only_second:3}  agree {self.percent:5.1f}%  kappa {k}")


def agreement(pairs: Sequence[tuple[frozenset[str], frozenset[str]]]) -> list[Agreement]:
    """Per question (screened out, each code, credentials or live): counts and kappa over (first, second) pairs."""
    questions = [("screened out", lambda c: bool(c))]
    questions += [(code, lambda c, code=code: code in c) for code in CODES]
    questions.append(("credentials or live", lambda c: bool(c & CRED_OR_LIVE)))
    out = []
    for what, ask in questions:
        a = [ask(f) for f, _ in pairs]
        b = [ask(s) for _, s in pairs]
        both = list(zip(a, b, strict=True))
        out.append(Agreement(what, len(pairs), sum(x and y for x, y in both), sum(x and not y for x, y in both),
                             sum(y and not x for x, y in both), kappa(a, b)))
    return out


def load_second(path: Path) -> dict[str, frozenset[str]]:
    return {x["id"]: frozenset(x["codes"] or ()) for x in yaml.safe_load(path.read_text())}


def score(second: dict[str, frozenset[str]]) -> str:
    first = {i.id: i for i in load_items()}
    unknown = sorted(set(second) - set(first))
    if unknown:
        raise SystemExit(f"not in the set: {unknown[:5]}")
    lines = [f"second labelling: {len(second)} entries; first = labels.yaml; "
             "'first' and 'second' count entries with the code from that labelling only"]
    for half in (*HALVES, None):
        pairs = [(first[i].labels, codes) for i, codes in second.items() if half in (None, first[i].half)]
        lines.append(f"{half or 'overall'} (n={len(pairs)})")
        lines += [a.line() for a in agreement(pairs)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--sample", type=int, metavar="N", help="print a stratified sample of N entries as YAML")
    group.add_argument("--score", type=Path, metavar="FILE", help="compare a second labelling with labels.yaml")
    args = ap.parse_args()
    if args.sample is not None:
        entries = yaml.safe_load(ENTRIES_FILE.read_text())
        rows = [{k: e[k] for k in ("id", "repo", "commit", "path")} for e in sample(entries, args.sample)]
        print(yaml.safe_dump(rows, sort_keys=False, allow_unicode=True), end="")
    else:
        print(score(load_second(args.score)))


if __name__ == "__main__":
    main()
