"""The second opinion's measurement sample (issue 28): a stratified, seeded draw from the screening set's TEST half,
scored only as aggregates (README.md > Discipline: no test-half id is printed, and none is written to this
repository; the per-skill results file a measurement writes lives outside it, for the aggregation only).

Strata, over the verdict of the screen as shipped (rules + learned opinion, `CrawlSettings()`):

    eligible_screened_out  labelled eligible, screened out by the screen      every one
    needs                  labelled account, live service or hardware, not     a seeded sample of NEEDS
                           labelled malicious
    malicious              labelled malicious                                 every one
    eligible_passed        labelled eligible, passed by the screen            a seeded sample of PASSED (where a
                                                                              model could add a wrong reason)

A seeded draw orders a stratum by SHA-256 of (seed, entry id) and takes the first n, so the same seed, labels and
screen always give the same sample. Each drawn skill carries its stratum's weight (population / drawn), which turns
the sample's figures into estimates for the whole test half (the eligible-wrongly-screened-out rate, in particular,
is only meaningful over every eligible skill, not over a sample chosen for being screened out).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from evaluate import CODES, TARGETS, Item

NEEDS_CODES = frozenset({"needs_external_account", "needs_live_service", "needs_hardware"})
NEEDS = 36
PASSED = 16
DEFAULT_SEED = 28

Stratum = tuple[str, Callable[[Item], bool], int | None]  # name, member test, how many to draw (None: all)
STRATA: tuple[Stratum, ...] = (
    ("eligible_screened_out", lambda i: not i.labels and bool(i.got), None),
    ("needs", lambda i: bool(i.labels & NEEDS_CODES) and "malicious" not in i.labels, NEEDS),
    ("malicious", lambda i: "malicious" in i.labels, None),
    ("eligible_passed", lambda i: not i.labels and not i.got, PASSED),
)


@dataclass(frozen=True)
class Drawn:
    item: Item
    stratum: str
    weight: float  # population of the stratum / drawn from it


def draw(items: list[Item], seed: int = DEFAULT_SEED) -> list[Drawn]:
    """The stratified sample; `items` must carry the screen's verdict (`got`). An item belongs to the first stratum
    it fits; skills with no readable SKILL.md are left out (nothing to show a model)."""
    readable = [i for i in items if i.record is not None and i.record.body]
    taken: set[str] = set()
    out: list[Drawn] = []
    for name, member, n in STRATA:
        pool = sorted((i for i in readable if member(i) and i.id not in taken), key=lambda i: _order(seed, i.id))
        chosen = pool if n is None else pool[:n]
        taken |= {i.id for i in chosen}
        out += [Drawn(i, name, len(pool) / len(chosen)) for i in chosen]
    return out


def _order(seed: int, entry_id: str) -> str:
    return hashlib.sha256(f"{seed}|{entry_id}".encode()).hexdigest()


def digest(sample: Iterable[Drawn]) -> str:
    """A fingerprint of the drawn ids (to check a re-draw is the same sample without printing any id)."""
    return hashlib.sha256("\n".join(sorted(d.item.id for d in sample)).encode()).hexdigest()[:16]


def part(sample: list[Drawn], k: int, n: int) -> list[Drawn]:
    """The k-th of n interleaved parts (1-based), each with every stratum, for parallel queues."""
    return [d for j, d in enumerate(sample) if j % n == k - 1]


# ------------------------------------------------------------------------------------------ results and figures
@dataclass(frozen=True)
class Result:
    """One drawn skill's verdicts: the screen's, with the opinion adding only, adding and clearing."""

    stratum: str
    weight: float
    labels: frozenset[str]
    screen: frozenset[str]
    adds: frozenset[str]
    clears: frozenset[str]
    failed: bool
    differences: tuple[str, ...] = ()  # kinds of the opinion's recorded differences (unverified_evidence, ...)


def result_of(d: Drawn) -> Result:
    op = d.item.opinion
    failed = "failed" in op
    kinds = tuple(sorted(x.split("#")[0] for x in op.get("disagreements", frozenset())))
    return Result(d.stratum, d.weight, d.item.labels, d.item.got, op.get("adds", d.item.got) if not failed else
                  d.item.got, op.get("adds_and_clears", d.item.got) if not failed else d.item.got, failed, kinds)


def write_results(path: Path, drawn: list[Drawn], entry_ids: bool) -> None:
    """Append one JSON line per skill. Ids only when asked (the aggregation needs none; an audit after tuning
    has ended for good may)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for d in drawn:
            r = result_of(d)
            row = {"stratum": r.stratum, "weight": r.weight, "labels": sorted(r.labels), "screen": sorted(r.screen),
                   "adds": sorted(r.adds), "clears": sorted(r.clears), "failed": r.failed,
                   "differences": list(r.differences)}
            if entry_ids:
                row["id"] = d.item.id
            f.write(json.dumps(row) + "\n")


def read_results(paths: Iterable[Path]) -> list[Result]:
    out = []
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                out.append(Result(r["stratum"], r["weight"], frozenset(r["labels"]), frozenset(r["screen"]),
                                  frozenset(r["adds"]), frozenset(r["clears"]), r["failed"],
                                  tuple(r.get("differences", ()))))
    return out


VERDICTS = ("screen", "adds", "clears")


def figures(results: list[Result], weighted: bool) -> dict[str, dict[str, tuple[float | None, str]]]:
    """target -> verdict -> (value, 'hits/members'); weighted: each skill counts its stratum's weight (a test-half
    estimate; the k/n shown are then the sample's own counts)."""
    out: dict[str, dict[str, tuple[float | None, str]]] = {}
    for name, (member, hit) in TARGETS.items():
        row: dict[str, tuple[float | None, str]] = {}
        for v in VERDICTS:
            members = [r for r in results if member(_as_item(r))]
            w = [r.weight if weighted else 1.0 for r in members]
            h = [hit(getattr(r, v)) for r in members]
            total = sum(w)
            value = sum(x for x, ok in zip(w, h, strict=True) if ok) / total if total else None
            row[v] = (value, f"{sum(h)}/{len(h)}")
        out[name] = row
    return out


def _as_item(r: Result) -> Item:
    return Item(id="", repo="", commit="", path="", pool="", half="test", labels=r.labels, why="")


def strata_summary(results: list[Result]) -> dict[str, dict[str, int]]:
    """Per stratum: drawn, failed calls, skills the opinion cleared (screened out -> eligible), skills it screened
    out that the screen passed, and skills whose codes it changed at all."""
    out: dict[str, dict[str, int]] = {}
    for name, _, _ in STRATA:
        rs = [r for r in results if r.stratum == name]
        out[name] = {
            "drawn": len(rs),
            "failed": sum(r.failed for r in rs),
            "cleared": sum(bool(r.screen) and not r.clears for r in rs),
            "newly_screened_out": sum(not r.screen and bool(r.clears) for r in rs),
            "codes_changed": sum(r.clears != r.screen for r in rs),
        }
    return out


def code_changes(results: list[Result]) -> dict[str, Counter[str]]:
    """Per verdict, how many skills gained (+code) or lost (-code) each code against the screen."""
    out: dict[str, Counter[str]] = {}
    for v in ("adds", "clears"):
        c: Counter[str] = Counter()
        for r in results:
            got = getattr(r, v)
            c.update(f"+{x}" for x in got - r.screen if x in CODES)
            c.update(f"-{x}" for x in r.screen - got if x in CODES)
        out[v] = c
    return out


def differences(results: list[Result]) -> dict[str, int]:
    """How often each kind of difference was recorded (an unverified quote, a finding kept unseen, ...)."""
    return dict(Counter(k for r in results for k in r.differences).most_common())
