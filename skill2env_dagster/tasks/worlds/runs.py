"""The run world: logs of people (or jobs) following one of the skill's procedures or checklists, some compliant,
some with a required step missing or done out of order — and the cases where the skill's wording decides:
optional steps skipped (compliant), a step retried in a row (compliant), runs out of scope, truncated logs.

Verdict rules (stated in the instruction; which steps are optional is only in the quoted procedure):
- missing: a required step never appears; `step` = the lowest-numbered such step;
- out_of_order (ordered procedures only): a step appears after a later step of the procedure; `step` = that step;
- ok otherwise; a run's log that ends without the closing line is `unreadable`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from skill2env_dagster.models.blueprint import Predicate

VERDICTS = ("ok", "missing", "out_of_order")


@dataclass
class Run:
    id: str
    steps: list[int]  # 1-based step numbers in log order
    kind: str  # compliant | missing | out_of_order | optional_skip | retry | retry_out_of_order | ...
    mode: str = "live"  # "dry-run" runs are out of scope when the precondition effect is in play
    truncated: bool = False
    operator: str = ""


@dataclass
class RunWorld:
    pred: Predicate
    ordered: bool
    labels: list[str]
    optional: list[bool]
    runs: list[Run]
    scoped: bool
    operators: list[str] = field(default_factory=list)

    def required(self) -> list[int]:
        return [i + 1 for i, o in enumerate(self.optional) if not o]

    def verdict(self, run: Run) -> tuple[str, str]:
        """(verdict, step) by the rules in the module docstring."""
        if run.truncated:
            return "unreadable", ""
        seen = set(run.steps)
        missing = [s for s in self.required() if s not in seen]
        if missing:
            return "missing", str(missing[0])
        if self.ordered:
            high = 0
            for s in run.steps:
                if s < high:
                    return "out_of_order", str(s)
                high = max(high, s)
        return "ok", ""

    def in_scope(self, run: Run) -> bool:
        return not self.scoped or run.mode == "live"

    def expected(self) -> dict[str, tuple[str, str]]:
        return {r.id: self.verdict(r) for r in self.runs if self.in_scope(r)}


def _base(world_n: int, optional: list[bool], rng: random.Random, skip_optional: bool) -> list[int]:
    steps = [i + 1 for i in range(world_n) if not optional[i] or (not skip_optional and rng.random() < 0.7)]
    return steps or [1]


def _with(kind: str, n: int, optional: list[bool], ordered: bool, rng: random.Random) -> list[int] | None:
    """A step sequence of the given kind (None when the procedure cannot have it)."""
    req = [i + 1 for i in range(n) if not optional[i]]
    opt = [i + 1 for i in range(n) if optional[i]]
    steps = _base(n, optional, rng, skip_optional=False)
    if kind == "compliant":
        return steps
    if kind == "optional_skip":
        return _base(n, optional, rng, skip_optional=True) if opt else None
    if kind == "missing":
        gone = rng.choice(req)
        return [s for s in steps if s != gone] or None
    if kind == "missing_late":  # the last required step left out: a run that stopped early
        return [s for s in steps if s != req[-1]] or None
    if kind == "retry":
        i = rng.randrange(len(steps))
        return [*steps[: i + 1], steps[i], *steps[i + 1:]]
    if kind in ("out_of_order", "retry_out_of_order"):
        if not ordered or len(steps) < 2:
            return None
        i = rng.randrange(len(steps) - 1)
        out = [*steps[:i], steps[i + 1], steps[i], *steps[i + 2:]]
        if kind == "retry_out_of_order":
            out = [*out[: i + 1], out[i], *out[i + 1:]]
        return out
    if kind == "late_repeat":  # an earlier step done again after later ones: out of order, not a retry
        if not ordered or len(steps) < 3:
            return None
        return [*steps, steps[0]]
    raise ValueError(kind)


def build(pred: Predicate, n_runs: int, rng: random.Random, words: list[str], *, ordered: bool,
          precondition: bool = False, corrupted: bool = False) -> RunWorld:
    labels: list[str] = list(pred.params["steps"])
    optional: list[bool] = list(pred.params.get("optional") or [False] * len(labels))
    if not any(not o for o in optional):
        optional = [False] * len(labels)
    n = len(labels)
    kinds = ["compliant", "missing", "missing_late", "retry"]
    kinds += ["optional_skip"] if any(optional) else []
    kinds += ["out_of_order", "retry_out_of_order", "late_repeat"] if ordered else ["missing"]
    plan = [kinds[i % len(kinds)] for i in range(n_runs)]
    rng.shuffle(plan)
    operators = sorted(set(words[: max(2, min(4, len(words)))])) or ["ops"]
    runs = []
    for i, kind in enumerate(plan):
        steps = _with(kind, n, optional, ordered, rng) or _with("missing", n, optional, ordered, rng) or [1]
        runs.append(Run(id=f"a-{i + 1:03d}", steps=steps, kind=kind, operator=operators[i % len(operators)]))
    extra = []
    if precondition:  # dry runs break the procedure but are out of scope
        for _ in range(2):
            steps = _with("missing", n, optional, ordered, rng) or [1]
            extra.append(Run(id="", steps=steps, kind="dry_run", mode="dry-run"))
    if corrupted:
        extra.append(Run(id="", steps=_with("compliant", n, optional, ordered, rng) or [1], kind="truncated",
                         truncated=True))
    for r in extra:
        r.operator = rng.choice(operators)
    runs += extra
    rng.shuffle(runs)
    for i, r in enumerate(runs):
        r.id = f"a-{i + 1:03d}"
    world = RunWorld(pred, ordered, labels, optional, runs, precondition, operators)
    _require_spread(world)
    return world


def _require_spread(world: RunWorld) -> None:
    verdicts = [v for v, _ in world.expected().values()]
    if verdicts.count("ok") > 0.5 * len(verdicts) or verdicts.count("ok") == 0:
        raise ValueError("runs: the share of ok runs must be between one run and half of the runs")
    if sum(v != "ok" for v in verdicts) < 2:
        raise ValueError("runs: fewer than two non-compliant runs")


@dataclass
class PartialRun:
    id: str
    steps: list[int]  # completed steps in log order
    kind: str  # fresh | progressing | skipped_earlier | optional_next | finished | retry


def next_step(world: RunWorld, steps: list[int]) -> str:
    """The step to do next: the lowest-numbered required step not yet completed, or `done`."""
    left = [s for s in world.required() if s not in steps]
    return str(left[0]) if left else "done"


def add_dry_runs(world: RunWorld, runs: list[PartialRun], rng: random.Random) -> list[str]:
    """Two or three dry runs (rehearsals: out of scope, never resumed) among the runs, all renumbered; their ids."""
    n = len(world.labels)
    runs += [PartialRun("", list(range(1, rng.randint(1, max(1, n - 1)) + 1)), "dry_run")
             for _ in range(2 + rng.randint(0, 1))]
    rng.shuffle(runs)
    for i, r in enumerate(runs):
        r.id = f"a-{i + 1:03d}"
    return sorted(r.id for r in runs if r.kind == "dry_run")


def build_partial(pred: Predicate, n_runs: int, rng: random.Random) -> tuple[RunWorld, list[PartialRun]]:
    """In-progress runs whose next step a solver must plan from the procedure: some skipped a required step
    earlier (it comes next, not the one after the last logged step), some stand before an optional step (which is
    not next), some are finished."""
    labels: list[str] = list(pred.params["steps"])
    optional: list[bool] = list(pred.params.get("optional") or [False] * len(labels))
    if all(optional):
        optional = [False] * len(labels)
    world = RunWorld(pred, True, labels, optional, [], False)
    req = world.required()
    kinds = ["progressing", "skipped_earlier", "finished", "retry", "fresh"]
    kinds += ["optional_next"] if any(optional) else ["skipped_earlier"]
    runs = []
    for i in range(n_runs):
        kind = kinds[i % len(kinds)]
        cut = rng.randint(1, max(1, len(labels) - 1))
        steps = [s for s in range(1, cut + 1) if not optional[s - 1] or rng.random() < 0.5]
        if kind == "fresh":
            steps = []
        elif kind == "finished":
            steps = [s for s in range(1, len(labels) + 1) if not optional[s - 1] or rng.random() < 0.5]
        elif kind == "skipped_earlier" and len([s for s in steps if s in req]) >= 2:
            gone = rng.choice([s for s in steps if s in req][:-1])
            steps = [s for s in steps if s != gone]
        elif kind == "optional_next" and any(optional):
            j = rng.choice([k for k, o in enumerate(optional) if o])
            steps = [s for s in range(1, j + 1) if not optional[s - 1]]
        elif kind == "retry" and steps:
            steps = [*steps, steps[-1]]
        runs.append(PartialRun(f"a-{i + 1:03d}", steps, kind))
    rng.shuffle(runs)
    for i, r in enumerate(runs):
        r.id = f"a-{i + 1:03d}"
    answers = [next_step(world, r.steps) for r in runs]
    if max(answers.count(a) for a in set(answers)) > 0.5 * len(answers) or len(set(answers)) < 3:
        raise ValueError("runs: next steps too uniform")
    naive = [str(max(r.steps) + 1) if r.steps and max(r.steps) < len(labels) else "done" if r.steps else "1"
             for r in runs]
    if sum(a != b for a, b in zip(answers, naive, strict=True)) < 2:
        raise ValueError("runs: 'the step after the last one logged' would be right almost everywhere")
    return world, runs
