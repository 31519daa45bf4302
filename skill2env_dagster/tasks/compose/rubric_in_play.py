"""The rubric's last step: only bullets tied to what the blueprint puts in play (`gates.rubric_ties`) are kept; a
section left empty gets a bullet from the rules in play, so the rubric keeps its required shape."""

from __future__ import annotations

from skill2env_dagster.gates.rubric_ties import RulesInPlay, tie
from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, rule_bullet

SECTIONS = ("must-do", "must-avoid", "best-practice")
STATEMENT_CHARS = 160


def _statement(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= STATEMENT_CHARS else t[: STATEMENT_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _fallback(section: str, bp: TaskBlueprint) -> Bullet:
    p = bp.predicates[0]
    if section == "must-do" and bp.acceptance:
        c = bp.acceptance[0]
        return Bullet(c.checks, f"metric:{c.metric}")
    if section == "must-avoid":
        return Bullet(f"Ignoring the skill's rule \"{_statement(p.statement)}\" where it applies", p.source.label)
    return rule_bullet(p, "to every case in this task")


def in_play(spec: RubricSpec, bp: TaskBlueprint) -> RubricSpec:
    """`spec` without its off-task bullets (see module docstring)."""
    play = RulesInPlay.from_blueprint(bp)
    kept = []
    for section, items in zip(SECTIONS, (spec.must_do, spec.must_avoid, spec.best_practice), strict=True):
        tied = [b for b in items if tie(section, b.text, b.source, play)[0]]
        kept.append(tied or [_fallback(section, bp)])
    return RubricSpec(*kept)
