"""Recorded transcripts of a capable model (answering through ../shared/tools/llmrelay for
benchmarks/bench_creator.py) replayed end to end: the same tool calls, through the creator agent's harness, the
workbench, the freeze and the real gates, must again end with the task retained, candidate by candidate as
recorded. They need the shared corpus (the skills they were made from) and a Docker engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill2env_dagster.creator import CreatorAgent, CreatorLimits
from skill2env_dagster.creator.lab import DockerLab
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.plan import Workflow
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import make_context
from skill2env_dagster.tasks.pipeline import CreationSettings, create_task
from tests.docker.conftest import RUN_ID
from tests.support.creator_replay import ReplayChat

pytestmark = [pytest.mark.docker, pytest.mark.corpus]
TRANSCRIPTS = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "creator_transcripts").glob("*.json"))
# Retained when recorded, rejected since by a rule that came later; everything up to the verdict replays as
# recorded. The skill-blind baseline battery (gates/blind.py): reconciliation (run 1, before the battery) - most
# register rows are outstanding, so a generic listing of rows earns items_listed >= 0.5 and a table parser copying
# columns by name earns item_fields; ticket-triage (run 2, when the battery skipped SQLite outputs) - the triage is
# written into queue.db in place, and a table parser joining the runbook's signal-word table earns category >= 0.5.
# The model's own cheats judged metric by metric (creator.session.own_cheats_per_metric): run 1's versions of two
# tasks whose run-2 versions are retained again.
REJECTS = {"reconciliation--table-aging-analysis-for-outstanding-ite-v1": ReasonCode.SKILL_BLIND_BASELINE_PASSED,
           "ticket-triage--table-category-taxonomy-v0": ReasonCode.SKILL_BLIND_BASELINE_PASSED,
           "incident-response--table-severity-classification-v1--run1": ReasonCode.SHORTCUT_PASSED,
           # The answer_key stage (gates/answer_key.py): run 3's task 09 (blind review: its verifier runs the solver's
           # bot while /tests/expected.json is readable; a bot reading glob('/tests/*.json')[0] scored 1.0 on every
           # metric), and the seo-audit task, whose verifier runs the solver's Python program as root with the key
           # readable (`subprocess.run(["/usr/bin/python3", PROGRAM, ...])`): the same hole, found by the stage on a
           # task no review had flagged. (Run 1's seo-audit transcript ended at the same stage for the same reason:
           # removed from the replays, which it only made 30 s longer.)
           "seo-audit--trigger-v1": ReasonCode.ANSWER_KEY_READABLE,
           "ticket-triage--triage-rules-engine-fix-v1": ReasonCode.ANSWER_KEY_READABLE}
# Task 09 has a second hole: its grader (python3 -I -S) runs the solver's bot with a plain python3, which loads the
# tamper kit's planted .pth; whether the kit's re-forger lands its write after the grader's (tamper_vulnerable, an
# earlier stage) or not (then the answer_key stage rejects) is a race of the engine's scheduling: either is right.
ALSO_REJECTED_BY = {"ticket-triage--triage-rules-engine-fix-v1": ReasonCode.TAMPER_VULNERABLE}


def test_there_are_transcripts_of_three_skills_the_gate_retains():
    skills = {json.loads(p.read_text())["skill_folder"] for p in TRANSCRIPTS if p.stem not in REJECTS}
    assert len(skills) >= 3, skills


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_a_recorded_transcript_is_retained_again(path, corpus_dir, docker_client, tmp_path):
    t = json.loads(path.read_text())
    (skill,) = [r for r in crawl_paths([corpus_dir / t["skill_folder"]]).records if r.skill_file]
    pins = load_base_images()
    ctx = make_context(skill, Workflow.model_validate(t["workflow"]), AxisSample.model_validate(t["sample"]), pins,
                       t["task_name"])
    settings = GateSettings(run_id=RUN_ID)
    chat = ReplayChat(t, pins)
    # Recorded before the freeze needed a retained trial with the model's cheats (creator4): replayed under the
    # harness they were recorded with; the trial rule itself is tested with the scripted model.
    agent = CreatorAgent(chat, "replay", "pv", DockerLab(settings), settings,
                         CreatorLimits(max_candidates=len(t["candidates"]), strict=False))
    bundle, report = create_task(ArtifactStore(tmp_path / "store"), ctx, agent, lambda p: gate_task(p, settings),
                                 CreationSettings())
    assert [r.turns for r in bundle.creator] == t["recorded"]["turns"]
    if path.stem in REJECTS:
        assert bundle.reasons in ([REJECTS[path.stem]], [ALSO_REJECTED_BY.get(path.stem)]), (bundle.reasons,
                                                                                             bundle.evidence)
        return
    assert [r.status for r in bundle.creator] == t["recorded"]["statuses"], (bundle.reasons, bundle.evidence)
    assert bundle.status == "retained" and report is not None and compute_freeze_hash(bundle.path) == bundle.freeze_hash
