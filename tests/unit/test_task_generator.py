"""The offline generator on the host (no Docker): a task only where a rule of the skill decides it, in an artifact
of the kind the skill works on. Every file-world task of the example skills, at the easiest and the hardest level:
the Oracle scores 1, the no-op 0, the naive wrong.sh below 1; every creator cheat and every skill-blind baseline
stays below 0.5 (the baselines on every metric); destructive mutants cost a metric; the instruction states every
rule and convention the verifier grades; the rubric keeps the skill's polarity; the task grades its workflow's
rule."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from skill2env_dagster.gates.rubric import rubric_bullets, rubric_problems
from skill2env_dagster.gates.services import COMPOSE_FILE, parse_services
from skill2env_dagster.knowledge.source import plain
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.tasks.blueprints import NoShapeError
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import task_config, task_name, workflow_sources
from skill2env_dagster.tasks.standins import http_stub
from skill2env_dagster.tasks.standins.http_stub import JOURNAL
from tests.unit.task_helpers import plans_and_axes, skill_from_dir, vague_skill
from tests.unit.task_localrun import (
    baseline_trials,
    build_world,
    cheat_trials,
    mean,
    mutant_trials,
    three_trials,
    trial,
)

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}
CHEAT_LIMIT = 0.5
BLIND_LIMIT = 0.5
TRIVIAL_MUTANTS = ("empty", "header_only", "superset_junk", "same_shape_junk")
# Skills of our own for the families no example skill has: a guard's blocked commands, forbidden column types, and
# a bookkeeping skill's review flags.
FIXTURE_SKILLS = {
    "cluster-guard": """---
name: cluster-guard
description: Guard an agent's kubectl use on shared clusters.
---
# Cluster guard

## What the hook blocks
- `kubectl delete` (every resource kind)
- `kubectl drain`
- `kubectl scale --replicas=0`
- `kubectl rollout undo`
""",
    "schema-style": """---
name: schema-style
description: Column type rules for our warehouse schemas.
---
# Schema style

### Forbidden column types
- DO NOT use `float`; DO use `numeric` instead.
- DO NOT use `varchar(n)`; DO use `text` instead.
- DO NOT use `timestamp` (without time zone); DO use `timestamptz` instead.
""",
    "expense-review": """---
name: expense-review
description: Review a month of company card expenses before they are booked.
---
# Expense review

## Flag for review
- **Split purchases** — same vendor, same amount, within 2 days
- **Missing approvals** — expenses above $500 with no approver
- **Unassigned expenses** — card lines with no category
""",
}
# (skill, shape): per-severity acknowledgement limits on a pager export; one limit counted from a named start event
# on an invoice export; a skill linter's rules on a repository of skill folders (example skills); then the three
# skills above.
FILE_TASKS = [("log-triage-awk", "deadline_audit"), ("invoice-reconciliation", "deadline_audit"),
              ("skill-linter", "skill_folder_audit"), ("cluster-guard", "command_guard_audit"),
              ("schema-style", "sql_type_audit"), ("expense-review", "ledger_flags")]


@pytest.fixture(scope="module")
def skills_dir(examples_dir, tmp_path_factory):
    """The example skills and the fixture skills above, side by side."""
    root = tmp_path_factory.mktemp("skills")
    for name, text in FIXTURE_SKILLS.items():
        (root / name).mkdir()
        (root / name / "SKILL.md").write_text(text)
    for name in ("log-triage-awk", "invoice-reconciliation", "skill-linter"):
        (root / name).symlink_to(examples_dir / name)
    return root


def _planned(skill, shape: str, complexity: str):
    plans, axes = plans_and_axes(skill, [shape], complexity)
    s = axes.samples[0]
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    ctx = make_context(skill, wf, s, PINS, task_name(skill, s), focus=wf.focus)
    gen = OfflineGenerator()
    return gen, ctx, gen.plan(ctx)


def _bash_ok(text: str, tmp_path, name: str) -> None:
    p = tmp_path / name
    p.write_text(text)
    assert subprocess.run(["bash", "-n", str(p)]).returncode == 0, name


@pytest.mark.parametrize("complexity", ["easy", "complex"])
@pytest.mark.parametrize(("skill_name", "shape"), FILE_TASKS)
def test_every_file_task_is_honest_on_the_host(skills_dir, skill_name, shape, complexity, tmp_path):
    skill = skill_from_dir(skills_dir / skill_name)
    gen, ctx, planned = _planned(skill, shape, complexity)
    bp, d = planned.blueprint, planned.design
    assert d.shape == shape and bp.axes.fallback_reason == "", bp.axes.fallback_reason
    text = gen.instruction(ctx)
    assert 2 <= len([p for p in text.split("\n\n") if p.strip()]) <= 3
    assert d.stated and all(" ".join(x.split()) in text for x in d.stated)
    assert rubric_problems(gen.rubric(ctx)) == []
    for name, script in {"solve.sh": d.solve, "wrong.sh": d.wrong or "", "test.sh": d.tests()["test.sh"],
                         **d.cheats}.items():
        _bash_ok(script, tmp_path, name)
    ast.parse(d.tests()["check.py"])
    oracle, nop, wrong = three_trials(d, tmp_path / "t")
    assert oracle and all(v == 1 for v in oracle.values()), oracle
    assert nop and all(v == 0 for v in nop.values()), nop
    assert wrong and not all(v == 1 for v in wrong.values()), wrong
    if shape == "deadline_audit":  # the naive reading drops conditions: one dropped condition is 0 here
        assert wrong["every_condition"] == 0, wrong
    for cheat, metrics in cheat_trials(d, tmp_path / "c").items():
        assert mean(metrics) <= CHEAT_LIMIT, (cheat, metrics)
    for baseline, metrics in baseline_trials(d, tmp_path / "b").items():
        assert all(v < BLIND_LIMIT for v in metrics.values()), (baseline, metrics)
    for mutant, metrics in mutant_trials(d, tmp_path / "m").items():
        assert any(metrics.get(k, 0) < oracle[k] for k in oracle), (mutant, metrics)
        if mutant in TRIVIAL_MUTANTS:  # the gate's "list everything" / no-work outputs: shortcut_passed above 0.5
            assert mean(metrics) <= CHEAT_LIMIT, (mutant, metrics)


# Readings that drop one condition of the rule, as edits of the reference solver (blind review 2's naive kinds: the
# duplicates' vendor or window ignored, the whole file counted for the body, a folded description read raw, comments
# or letter case ignored, open records or extensions ignored, one limit for every category, "under" read as "at
# most"). Each must score below 0.5 on EVERY metric: a task that pays a partial reading half its reward teaches it.
DROPS = {
    "ledger_flags": {
        "duplicates by one field": [("x[a] == y[a] and ", "")], "no window": [(" and close", "")],
        "window without its last day": [('.days) <= f["value"]', '.days) < f["value"]')],
        "at the bound": [('float(r["amount"]) > f["value"]', 'float(r["amount"]) >= f["value"]')],
        "any empty cell": [('float(r["amount"]) > f["value"] and ', "")],
        "spaces not empty": [('if not r[f["fields"][0]].strip()]', 'if not r[f["fields"][0]]]')]},
    "skill_folder_audit": {
        "whole file for the body": [('"body" and breaks(body, r):\n            rows.append((rel, rid, body))',
                                     '"body" and breaks(whole, r):\n            rows.append((rel, rid, whole))')],
        "folded description raw": [('desc = " ".join(folded)', 'desc = "\\n  ".join([raw] + folded)')],
        "one comparator": [('length >= rule["value"] if rule["comparator"] == "lt" else length > rule["value"]',
                            'length > rule["value"]')],
        "no contents check": [('if n > r["value"] and not toc(text):', 'if n > r["value"]:')]},
    "sql_type_audit": {
        "comments kept": [('line = raw.split("--", 1)[0].strip()', 'line = raw.replace("--", " ", 1).strip()')],
        "letter case": [('text = " ".join(type_text.lower().split())', 'text = " ".join(type_text.split())')],
        "time zone look-alike": [('and not re.search(r"\\bwith time zone\\b", text)', "")]},
    "deadline_audit": {
        "no extensions": [('if lim["ext_amount"] and', "if False and")],
        "open never late": [('    end = when(rec[SPEC["end"]]) if rec.get(SPEC["end"]) else exported\n',
                             '    if not rec.get(SPEC["end"]):\n        continue\n    end = when(rec[SPEC["end"]])\n')],
        "one limit": [('lim = SPEC["limits"][rec[SPEC["category"]] if SPEC["category"] else SPEC["only"]]',
                       'lim = max(SPEC["limits"].values(), key=lambda x: x["amount"])')],
        "at the deadline": [("if end > due:", "if end >= due:")],
        "clock readings": [(".astimezone(timezone.utc)\n", ".replace(tzinfo=timezone.utc)\n")]},
}


@pytest.mark.parametrize(("skill_name", "shape"), [t for t in FILE_TASKS if t[1] in DROPS])
def test_a_reading_that_drops_one_condition_scores_below_half_on_every_metric(skills_dir, skill_name, shape,
                                                                             tmp_path):
    skill = skill_from_dir(skills_dir / skill_name)
    d = _planned(skill, shape, "complex")[2].design
    world = build_world(d, tmp_path)
    in_play = 0
    for name, edits in DROPS[shape].items():
        script = d.solve
        for old, new in edits:
            assert old in script, (name, old)  # the reference solver still reads the condition this way
            script = script.replace(old, new)
        metrics = trial(d, world, tmp_path, script)
        if all(v == 1 for v in metrics.values()):
            continue  # the condition is not in play in this skill's rule (no extension, no contents rule...)
        in_play += 1
        assert all(v < 0.5 for v in metrics.values()), (name, metrics)
    assert in_play >= 1


@pytest.mark.parametrize(("skill_name", "shape"), FILE_TASKS)
def test_the_instruction_quotes_each_graded_rule_and_the_task_grades_its_workflows(skills_dir, skill_name, shape):
    """Requirement 2 and 4 of issue 25: every rule the verifier grades is stated, quoted from the skill's own line,
    and the rules graded include the line the workflow was planned on."""
    skill = skill_from_dir(skills_dir / skill_name)
    gen, ctx, planned = _planned(skill, shape, "medium")
    text = gen.instruction(ctx)
    lines = (skills_dir / skill_name / "SKILL.md").read_text().splitlines()
    for p in planned.blueprint.predicates:
        for label in (p.source.label, *p.lines()):
            file, line = label.rsplit(":", 1)
            assert file == "SKILL.md" and lines[int(line) - 1].strip()
    params = planned.blueprint.predicates[0].params
    rules = [*params.get("deadlines", []), *params.get("rules", []), *params.get("types", []),
             *params.get("flags", [])]
    for r in rules:  # quoted in the instruction, and what the skill's own line says
        assert f"“{r['sentence'].rstrip('.:')}" in text, r["sentence"]
        assert r["sentence"][:20] in plain(lines[r["line"] - 1]), (r["sentence"], lines[r["line"] - 1])
    for x in params.get("patterns", []):  # a guard's patterns: quoted from their lines
        assert x["text"] in text and f"`{x['text']}`" in lines[x["line"] - 1]
    assert rules or params.get("patterns")
    assert ctx.workflow.focus is not None
    assert workflow_sources(ctx.workflow, True)[0] in planned.blueprint.summary()["blueprint_sources"]


@pytest.mark.parametrize(("skill_name", "shape"), FILE_TASKS)
def test_the_rubric_keeps_the_skills_polarity(skills_dir, skill_name, shape):
    skill = skill_from_dir(skills_dir / skill_name)
    gen, ctx, _ = _planned(skill, shape, "hard")
    bullets = rubric_bullets(gen.rubric(ctx))
    assert not any(b.startswith("Avoid this:") or b.startswith("As the ") for bs in bullets.values() for b in bs)
    sources = gen.metadata(ctx)["rubric_sources"]
    assert all(sources[f"must-do-{i}"].startswith("metric:") for i in range(1, len(bullets["must-do"]) + 1))
    assert all(":" in sources[f"must-avoid-{i}"] for i in range(1, len(bullets["must-avoid"]) + 1))


@pytest.mark.parametrize("complexity", ["easy", "complex"])
def test_service_shape_keeps_the_skills_documented_api(examples_dir, complexity, tmp_path):
    api = skill_from_dir(examples_dir / "inventory-api-client")
    gen, ctx, planned = _planned(api, "service_sync", complexity)
    bp, d = planned.blueprint, planned.design
    assert d.shape == "service_sync" and bp.axes.fallback_reason == "", bp.axes.fallback_reason
    (p,) = bp.predicates
    assert p.kind == "service" and p.source.file == "SKILL.md" and "never retry" in p.statement
    assert p.params["collection"] == "/api/v1/reservations" and p.params["port"] == 8080
    assert list(p.params["example"]) == ["sku", "qty", "order_id"] and p.params["integers"] == ["qty"]
    contract = json.loads(d.env_files["stub/contract.json"])
    assert len(contract["seed"]) > contract["page_size"] and contract["flaky"]  # paging and 503s are in play
    assert {"records_created", "rejected_rows", "rejections_once", "transient_recovered"} == set(d.check.names)
    assert {"forge_state.sh", "forge_journal.sh", "forge_collected_journal.sh", "replace_stub.sh",
            "list_everything.sh"} <= set(d.cheats)
    assert "/usr/local/lib/s2e-stub/server.py" in d.tests()["check.py"]  # replayed by the installed stub's code
    [service] = parse_services(d.env_files[COMPOSE_FILE])  # the stub runs beside the agent, not in its container
    assert service.collect == [JOURNAL] and service.collected_path(JOURNAL) in d.tests()["check.py"]
    assert "ENTRYPOINT" not in "\n".join(d.docker_lines)
    # The forged journal is a real forgery: the stub's own replay accepts it and it creates exactly the batch's
    # new records (it would score 1 if the verifier read the agent's copy; tests/docker shows it scores 0).
    forged = d.cheats["forge_journal.sh"].split("<<'CHEAT_EOF'\n", 1)[1].split("CHEAT_EOF", 1)[0].splitlines()
    spec = importlib.util.spec_from_file_location("stub", Path(http_stub.__file__).parent / "http_stub_server.py")
    assert spec and spec.loader
    stub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stub)
    state = stub.replay(contract, forged)
    assert state is not None
    made = [[json.dumps(r[f]) for f in p.params["example"]] for r in state["records"][len(contract["seed"]):]]
    assert sorted(made) == d.expected["created"]
    assert rubric_problems(gen.rubric(ctx)) == []
    assert "/app/docs/API.md" in gen.instruction(ctx)
    for name, script in {"solve.sh": d.solve, "wrong.sh": d.wrong or "", "test.sh": d.tests()["test.sh"],
                         **d.cheats}.items():
        _bash_ok(script, tmp_path, name)
    ast.parse(d.tests()["check.py"])


def test_levels_add_items(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    items = [_planned(skill, "deadline_audit", c)[2].blueprint.complexity.items
             for c in ("easy", "medium", "hard", "complex")]
    assert items == sorted(items) and items[0] < items[-1]


def test_deterministic(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    (_, _, a), (_, _, b) = _planned(skill, "deadline_audit", "hard"), _planned(skill, "deadline_audit", "hard")
    assert a.design.env_files == b.design.env_files and a.design.tests() == b.design.tests()
    assert a.blueprint == b.blueprint


def test_unrealisable_combination_records_its_fallback(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    s = axes.samples[0].model_copy(update={"archetype": "service_runtime", "fallbacks": [],
                                           "primary_verifier_pattern": "behavioral_simulation"})
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    planned = OfflineGenerator().plan(make_context(skill, wf, s, PINS, "t", focus=wf.focus))
    assert planned.blueprint.axes.sampled_archetype == "service_runtime"
    assert planned.blueprint.axes.fallback_reason and planned.design.archetype != "service_runtime"


def test_blueprint_lands_in_task_metadata(examples_dir):
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    gen, ctx, _ = _planned(skill, "deadline_audit", "medium")
    meta = task_config(ctx, gen.environment(ctx), gen).metadata
    assert meta["blueprint_shape"] == "deadline_audit" and meta["blueprint_rules"][0].startswith("R1 deadline")
    assert meta["workflow_sources"] == [ctx.workflow.focus.source] and meta["blueprint_rule_lines"]
    assert set(meta["rubric_sources"]) >= {"must-do-1", "must-avoid-1", "best-practice-1"}


def test_skill_without_checkable_rules_gets_no_plan_and_no_task(tmp_path, examples_dir):
    skill = vague_skill(tmp_path)
    plans, axes = plans_and_axes(skill)
    assert plans.workflows == [] and axes.samples == [] and plans.skipped_reason is ReasonCode.NO_CHECKABLE_RULE
    other, other_axes = plans_and_axes(skill_from_dir(examples_dir / "log-triage-awk"))
    with pytest.raises(NoShapeError) as e:  # a workflow from elsewhere finds no rule of this skill either
        OfflineGenerator().plan(make_context(skill, other.workflows[0], other_axes.samples[0], PINS, "t"))
    assert e.value.reason is ReasonCode.NO_CHECKABLE_RULE


def test_check_script_keeps_every_required_metric_within_the_reward_limit():
    from skill2env_dagster.gates.reward import MAX_METRICS
    from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric

    required = [Metric(f"r{i}", "", "return 1.0") for i in range(4)]
    optional = [Metric(f"o{i}", "", "return 1.0", optional=True) for i in range(5)]
    check = CheckScript("def load():\n    return {}\n", [required[0], *optional, *required[1:]])
    assert len(check.names) == MAX_METRICS
    assert check.names == ["r0", "o0", "o1", "r1", "r2", "r3"]
