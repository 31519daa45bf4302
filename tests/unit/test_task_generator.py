"""The blueprint-based offline generator, shape by shape, on the host (no Docker): every shape realises its own
archetype/verifier combination from a skill's rules; the Oracle scores 1, the no-op 0, the naive wrong.sh below 1;
every creator-authored cheat stays at or below 0.5 and every destructive mutant of the Oracle's outputs costs at
least one metric — at the easiest and the hardest level."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from skill2env_dagster.gates.rubric import rubric_problems
from skill2env_dagster.gates.services import COMPOSE_FILE, parse_services
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.tasks.blueprints import NoShapeError
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import task_config, task_name
from skill2env_dagster.tasks.standins import http_stub
from skill2env_dagster.tasks.standins.http_stub import JOURNAL
from tests.unit.task_helpers import SHAPE_NAMES, plans_and_axes, skill_from_dir, vague_skill
from tests.unit.task_localrun import cheat_trials, mean, mutant_trials, three_trials

PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}
CHEAT_LIMIT = 0.5

HOUSE_STYLE = textwrap.dedent("""\
    ---
    name: release-hygiene
    description: House rules for release records, change logs and hand-over notes of the platform team.
    ---
    # Release hygiene

    ## Rules
    - Keep summary lines under 60 characters, except hotfix entries.
    - Never use `--force` in a deploy command.
    - Use `deploy_v2` instead of `deploy_v1`.
    - Release names must be kebab-case.
    - Release dates are ISO 8601 (YYYY-MM-DD).

    ## Release procedure
    1. Freeze the branch and announce the window.
    2. Run the smoke tests on staging.
    3. Tag the release commit.
    4. Update the status page if the outage is visible.
    5. Deploy to production.
    6. Verify the dashboards after the rollout.

    ## Severity levels
    | Level | Signal words | Response |
    |---|---|---|
    | SEV1 | outage, breach, dataloss | page the on-call lead |
    | SEV2 | degraded, latency, timeout | open an incident channel |
    | SEV3 | cosmetic, typo, layout | file a ticket |

    ## Hand-over note
    ```markdown
    # Hand-over: [service]
    ## Summary
    ## Open incidents
    ## Risks
    ## Next steps
    ```

    ## Pre-release checklist
    - [ ] Changelog entry written
    - [ ] Rollback plan attached
    - [ ] Owner on call named
    - [ ] Feature flags reviewed

    ## Pitfalls
    - Don't tag before the smoke tests pass.
    - Never deploy on Fridays without a rollback plan.
    """)


@pytest.fixture(scope="module")
def skill(tmp_path_factory):
    folder = tmp_path_factory.mktemp("skills") / "release-hygiene"
    folder.mkdir()
    (folder / "SKILL.md").write_text(HOUSE_STYLE)
    return skill_from_dir(folder)


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


# The stub-service shape needs its server on a fixed port and a skill that documents a local API: it is checked
# below for what the host can check, and its rewards in Docker (tests/docker/test_task_pipeline.py).
FILE_SHAPES = [n for n in SHAPE_NAMES if n != "service_sync"]


@pytest.mark.parametrize("complexity", ["easy", "complex"])
@pytest.mark.parametrize("shape", FILE_SHAPES)
def test_every_shape_is_honest_on_the_host(skill, shape, complexity, tmp_path):
    gen, ctx, planned = _planned(skill, shape, complexity)
    bp, d = planned.blueprint, planned.design
    assert d.shape == shape and bp.axes.fallback_reason == "", bp.axes.fallback_reason
    assert all(p.source.file == "SKILL.md" and p.source.quote in HOUSE_STYLE for p in bp.predicates)
    text = gen.instruction(ctx)
    assert 2 <= len([p for p in text.split("\n\n") if p.strip()]) <= 3
    assert rubric_problems(gen.rubric(ctx)) == []
    for name, script in {"solve.sh": d.solve, "wrong.sh": d.wrong or "", "test.sh": d.tests()["test.sh"],
                         **d.cheats}.items():
        _bash_ok(script, tmp_path, name)
    ast.parse(d.tests()["check.py"])
    oracle, nop, wrong = three_trials(d, tmp_path / "t")
    assert oracle and all(v == 1 for v in oracle.values()), oracle
    assert nop and all(v == 0 for v in nop.values()), nop
    assert wrong and not all(v == 1 for v in wrong.values()), wrong
    for cheat, metrics in cheat_trials(d, tmp_path / "c").items():
        assert mean(metrics) <= CHEAT_LIMIT, (cheat, metrics)
    if complexity == "complex":  # the hardest world has every effect the shape can realise
        for mutant, metrics in mutant_trials(d, tmp_path / "m").items():
            assert any(metrics.get(k, 0) < oracle[k] for k in oracle), (mutant, metrics)


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


def test_skill_without_a_local_api_gets_no_service_task(skill):
    plans, _ = plans_and_axes(skill)
    assert all(w.focus is None or w.focus.family != "service" for w in plans.workflows)


def test_levels_add_required_steps(skill):
    steps = [_planned(skill, "entry_audit", c)[2].blueprint.complexity.required_steps
             for c in ("easy", "medium", "hard", "complex")]
    assert steps == sorted(steps) and steps[0] < steps[-1]


def test_deterministic(skill):
    (_, _, a), (_, _, b) = _planned(skill, "run_audit", "hard"), _planned(skill, "run_audit", "hard")
    assert a.design.env_files == b.design.env_files and a.design.tests() == b.design.tests()
    assert a.blueprint == b.blueprint


def test_unrealisable_combination_records_its_fallback(skill):
    plans, axes = plans_and_axes(skill)
    s = axes.samples[0].model_copy(update={"archetype": "service_runtime", "fallbacks": [],
                                           "primary_verifier_pattern": "behavioral_simulation"})
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    planned = OfflineGenerator().plan(make_context(skill, wf, s, PINS, "t"))
    assert planned.blueprint.axes.sampled_archetype == "service_runtime"
    assert planned.blueprint.axes.fallback_reason and planned.design.archetype != "service_runtime"


def test_blueprint_lands_in_task_metadata(skill):
    gen, ctx, _ = _planned(skill, "table_cases", "medium")
    meta = task_config(ctx, gen.environment(ctx), gen).metadata
    assert meta["blueprint_shape"] == "table_cases" and meta["blueprint_rules"][0].startswith("R1 lookup")
    assert set(meta["rubric_sources"]) >= {"must-do-1", "must-avoid-1", "best-practice-1"}


def test_skill_without_checkable_rules_gets_a_reason(tmp_path):
    skill = vague_skill(tmp_path)
    plans, axes = plans_and_axes(skill)
    wf = plans.workflows[0]
    with pytest.raises(NoShapeError) as e:
        OfflineGenerator().plan(make_context(skill, wf, axes.samples[0], PINS, "t"))
    assert e.value.reason is ReasonCode.NO_CHECKABLE_RULE


def test_check_script_keeps_every_required_metric_within_the_reward_limit():
    from skill2env_dagster.gates.reward import MAX_METRICS
    from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric

    required = [Metric(f"r{i}", "", "return 1.0") for i in range(4)]
    optional = [Metric(f"o{i}", "", "return 1.0", optional=True) for i in range(5)]
    check = CheckScript("def load():\n    return {}\n", [required[0], *optional, *required[1:]])
    assert len(check.names) == MAX_METRICS
    assert check.names == ["r0", "o0", "o1", "r1", "r2", "r3"]
