"""Retrieval probe on a hand-made set whose answers are known in advance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from skill2env_dagster.models.probe import ProbeConfig, ProbeReport
from skill2env_dagster.models.skill import SkillRecord, SkillStatus
from skill2env_dagster.probe import SkillIndex, candidate_skills, load_tasks, probe_retrieval
from skill2env_dagster.probe.metrics import rank_metrics, truth_ranks
from skill2env_dagster.reasons import InputError, ReasonCode

SKILLS = {
    "hub/pdf-forms": ("pdf-forms", "docs", "Fill PDF forms with pypdf: read AcroForm fields, write values, flatten."),
    "hub/helm-charts": ("helm-charts", "devops",
                        "Package Kubernetes apps as Helm charts; lint templates, values.yaml."),
    "hub/csv-cleaning": ("csv-cleaning", "data", "Clean CSV files with pandas: dedupe rows, parse dates, fix dtypes."),
    "hub/git-bisect": ("git-bisect", "software", "Find the commit that broke a test with git bisect run and a script."),
}


def skill(skill_id: str, name: str, domain: str, body: str, status: SkillStatus = SkillStatus.ELIGIBLE) -> SkillRecord:
    return SkillRecord(
        skill_id=skill_id, source="hub", source_kind="dir", source_uri="/hub", rel_path=name,
        abs_path=f"/hub/{name}", skill_file="SKILL.md", name=name, description=body.split(":")[0],
        domain=domain, body=body, bundle_digest="0" * 64, status=status,
    )


@pytest.fixture()
def skills() -> list[SkillRecord]:
    return [skill(sid, *v) for sid, v in SKILLS.items()]


def write_task(root: Path, name: str, source: str, instruction: str, rubric: str, generator: str = "offline") -> None:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text(instruction)
    (d / "tests" / "rubric.md").write_text(rubric)
    (d / "task.toml").write_text(
        f'[task]\nname = "s2e/{name}"\n\n[metadata]\nsource_skill = "{source}"\ngenerator = "{generator}"\n'
    )


@pytest.fixture()
def tasks_dir(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    write_task(root, "t-pdf", "hub/pdf-forms", "Our intake PDF has AcroForm fields; fill them.",
               "- flatten the pdf form")
    write_task(root, "t-helm", "hub/helm-charts", "Ship this service as a Helm chart.", "- lint the chart templates",
               generator="llm")
    # The instruction points at its own skill, the rubric at another one: known split between modes.
    write_task(root, "t-csv", "hub/csv-cleaning", "The pandas CSV export has duplicate rows and bad dates.",
               "- commit with git")
    # Nothing in this task's words is in any skill: every mode must rank its skill last (ties count against it).
    write_task(root, "t-void", "hub/git-bisect", "Zzyzx quux.", "- frobnicate")
    return root


def test_known_answers(skills: list[SkillRecord], tasks_dir: Path) -> None:
    tasks, invalid = load_tasks(tasks_dir)
    report = probe_retrieval(skills, tasks, invalid=invalid)
    ranks = {t.task_id: t.ranks for t in report.per_task}
    assert ranks["t-pdf"]["instruction_rubric"] == 1
    assert ranks["t-helm"]["rubric_only"] == 1
    assert ranks["t-csv"]["instruction_only"] == 1
    assert ranks["t-csv"]["rubric_only"] > 1
    assert all(r == 4 for r in ranks["t-void"].values())
    ir = report.modes["instruction_rubric"]
    assert (ir.n, ir.top1, ir.top10) == (4, 0.75, 1.0)
    assert report.modes["rubric_only"].top1 == 0.5
    assert report.modes["instruction_rubric"].mrr == pytest.approx((1 + 1 + 1 + 0.25) / 4)
    assert report.modes["instruction_rubric"].empty_queries == 1
    assert report.worst_tasks[0].task_id == "t-void"


def test_chance_is_one_over_candidates(skills: list[SkillRecord], tasks_dir: Path) -> None:
    tasks, _ = load_tasks(tasks_dir)
    report = probe_retrieval(skills, tasks)
    assert report.n_skills == 4
    assert report.chance == pytest.approx(1 / 4)
    assert report.chance_top10 == 1.0
    many = [skill(f"hub/s{i}", f"s{i}", "x", f"word{i} other{i} thing{i}") for i in range(40)]
    assert probe_retrieval(many, tasks).chance_top10 == pytest.approx(10 / 40)


def test_breakdowns_by_domain_and_generator(skills: list[SkillRecord], tasks_dir: Path) -> None:
    tasks, _ = load_tasks(tasks_dir)
    mode = probe_retrieval(skills, tasks).modes["instruction_rubric"]
    assert set(mode.by_domain) == {"docs", "devops", "data", "software"}
    assert mode.by_domain["software"].top1 == 0.0
    assert mode.by_generator["llm"].n == 1 and mode.by_generator["offline"].n == 3


def test_unmatched_and_invalid_tasks_are_recorded_not_scored(skills: list[SkillRecord], tasks_dir: Path) -> None:
    write_task(tasks_dir, "t-elsewhere", "other/skill", "Fill the pdf form.", "- x")
    bad = tasks_dir / "t-broken"
    bad.mkdir()
    (bad / "task.toml").write_text("[metadata\nsource_skill=")
    nosrc = tasks_dir / "t-nosource"
    nosrc.mkdir()
    (nosrc / "task.toml").write_text('[task]\nname = "a/b"\n')
    tasks, invalid = load_tasks(tasks_dir)
    report = probe_retrieval(skills, tasks, invalid=invalid)
    by_id = {t.task_id: t for t in report.per_task}
    assert by_id["t-elsewhere"].status == "unmatched"
    assert by_id["t-elsewhere"].reason == ReasonCode.SOURCE_SKILL_UNKNOWN
    assert by_id["t-broken"].status == "invalid" and by_id["t-nosource"].status == "invalid"
    assert by_id["t-broken"].reason == ReasonCode.TASK_METADATA_INVALID
    assert (report.n_tasks, report.n_scored, report.n_unmatched, report.n_invalid) == (7, 4, 1, 2)
    assert report.modes["instruction_rubric"].n == 4


def test_candidates_are_eligible_skills_only(skills: list[SkillRecord]) -> None:
    dup = skill("hub/pdf-copy", "pdf-copy", "docs", "Fill PDF forms", status=SkillStatus.DUPLICATE)
    assert [s.skill_id for s in candidate_skills([*skills, dup])] == list(SKILLS)


def test_no_candidates_is_a_clear_error() -> None:
    with pytest.raises(InputError):
        probe_retrieval([], [])


def test_bm25_matches_rank_bm25(skills: list[SkillRecord]) -> None:
    index = SkillIndex(skills)
    analyze = index.vectorizer.build_analyzer()
    reference = BM25Okapi([analyze(s.text_for_retrieval()) for s in skills])
    query = "fill the pdf form fields and lint helm chart templates, pdf again"
    ours = index.bm25_scores(index.counts([query]))[0]
    assert np.allclose(ours, reference.get_scores(analyze(query)))
    assert np.allclose(index.scores(index.counts([query]))["bm25"][0], ours)


def test_masking_removes_shared_vocabulary(skills: list[SkillRecord], tmp_path: Path) -> None:
    # This task shares only the skill's distinctive nouns; with them masked it keeps nothing to match on.
    write_task(tmp_path, "t-nouns", "hub/helm-charts", "helm charts kubernetes", "- values.yaml")
    tasks, _ = load_tasks(tmp_path)
    report = probe_retrieval(skills, tasks, ProbeConfig(mask_top_k=10))
    assert report.per_task[0].ranks["instruction_rubric"] == 1
    assert report.per_task[0].ranks["masked_instruction_rubric"] == 4
    assert report.masking_drop["instruction_rubric"] == 1.0
    assert report.per_skill[1].skill_id == "hub/helm-charts" and report.per_skill[1].masked_top1 == 0.0


def test_truth_ranks_counts_ties_against_the_truth() -> None:
    scores = np.array([[0.5, 0.5, 0.1], [0.0, 0.0, 0.0], [0.2, 0.9, 0.3]])
    assert truth_ranks(scores, np.array([0, 2, 1])).tolist() == [2, 3, 1]
    assert rank_metrics([1, 2, 10, 11]).model_dump() == {"n": 4, "top1": 0.25, "top10": 0.75,
                                                          "mrr": pytest.approx((1 + 0.5 + 0.1 + 1 / 11) / 4)}


def test_report_round_trips_as_json(skills: list[SkillRecord], tasks_dir: Path) -> None:
    tasks, _ = load_tasks(tasks_dir)
    report = probe_retrieval(skills, tasks, ProbeConfig(modes=["instruction_rubric", "bm25_rubric_only"]))
    assert set(report.modes) == {"instruction_rubric", "bm25_rubric_only"}
    assert ProbeReport.model_validate_json(report.model_dump_json()) == report


def test_unknown_mode_is_rejected(skills: list[SkillRecord]) -> None:
    with pytest.raises(InputError):
        probe_retrieval(skills, [], ProbeConfig(modes=["telepathy"]))


def test_own_skill_found_when_source_name_differs(tmp_path: Path) -> None:
    """Tasks made from a configured source (`examples__x`) still match a crawl of the bare folder (`skillhub__x`):
    by bundle digest first, then by the path part of the id."""
    skills = [
        skill("skillhub__pdf-forms", "pdf-forms", "docs", "Fill PDF forms with pypdf: read AcroForm fields."),
        skill("skillhub__helm-charts", "helm-charts", "devops", "Package Kubernetes apps as Helm charts: lint."),
    ]
    skills[0] = skills[0].model_copy(update={"bundle_digest": "a" * 64})
    skills[1] = skills[1].model_copy(update={"bundle_digest": "b" * 64})
    root = tmp_path / "tasks"
    write_task(root, "t-pdf", "examples__renamed-folder", "Fill the AcroForm fields of our pdf.", "- pypdf")
    (root / "t-pdf" / "task.toml").write_text(
        '[metadata]\nsource_skill = "examples__renamed-folder"\nsource_bundle_digest = "' + "a" * 64 + '"\n')
    write_task(root, "t-helm", "examples__helm-charts", "Ship it as a Helm chart.", "- lint the chart")
    write_task(root, "t-none", "examples__unknown", "Nothing.", "- nothing")
    tasks, invalid = load_tasks(root)
    report = probe_retrieval(skills, tasks, ProbeConfig(modes=["instruction_rubric"]), invalid)
    status = {t.task_id: t.status for t in report.per_task}
    assert status["t-pdf"] == "scored" and status["t-helm"] == "scored" and status["t-none"] == "unmatched"
