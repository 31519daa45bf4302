"""`skill2env probe --tasks DIR --skills SOURCE_DIR... --json FILE` on a small crawled source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill2env_dagster.cli import main
from skill2env_dagster.skillhub.crawl import crawl_paths

SKILLS = {
    "pdf-forms": "Fill PDF forms with pypdf. Read the AcroForm fields of the pdf, write the values, then flatten "
    "the form so the answers cannot be edited. Check every required field is filled.",
    "helm-charts": "Package Kubernetes applications as Helm charts. Write templates and values.yaml, run helm lint "
    "and helm template, pin chart dependencies and keep secrets out of values.",
    "csv-cleaning": "Clean CSV files with pandas. Deduplicate rows, parse dates into ISO format, fix column dtypes "
    "and write a cleaning report listing every row that was dropped.",
}
TASKS = {
    "pdf-forms": ("Our intake pdf has AcroForm fields; fill them from answers.json.", "- flatten the form"),
    "helm-charts": ("Ship the service as a Helm chart for our Kubernetes cluster.", "- helm lint passes"),
    "csv-cleaning": ("The CSV export has duplicate rows and mixed dates; clean it with pandas.",
                     "- report dropped rows"),
}


def write_skill(root: Path, name: str, body: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {body.split('.')[0]}. Use when asked.\nlicense: MIT\n---\n\n# {name}\n\n"
        f"{body}\n\n## Steps\n\n1. Inspect the input files.\n2. {body.split('.')[1].strip()}.\n"
    )


def write_task(root: Path, name: str, source_skill: str, instruction: str, rubric: str) -> None:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "instruction.md").write_text(instruction)
    (d / "tests" / "rubric.md").write_text(f"## Must-do\n{rubric}\n")
    (d / "task.toml").write_text(f'[metadata]\nsource_skill = "{source_skill}"\ngenerator = "offline"\n')


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path]:
    skills = tmp_path / "hub"
    for name, body in SKILLS.items():
        write_skill(skills, name, body)
    ids = {r.name: r.skill_id for r in crawl_paths([skills]).records if r.status == "eligible"}
    assert set(ids) == set(SKILLS), f"fixture skills should all be eligible, got {ids}"
    tasks = tmp_path / "tasks"
    for name, (instruction, rubric) in TASKS.items():
        write_task(tasks, f"task-{name}", ids[name], instruction, rubric)
    return skills, tasks


def test_probe_command_writes_the_contract_json(setup: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    skills, tasks = setup
    out = tmp_path / "probe.json"
    assert main(["probe", "--tasks", str(tasks), "--skills", str(skills), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["n_skills"] == 3
    assert report["chance"] == pytest.approx(1 / 3)
    for mode in ("instruction_rubric", "rubric_only", "instruction_only"):
        assert {"top1", "top10", "mrr"} <= set(report["modes"][mode])
        assert 0 <= report["modes"][mode]["top1"] <= 1
    assert report["modes"]["instruction_rubric"]["top1"] == 1.0
    assert len(report["per_task"]) == 3
    assert "instruction_rubric" in capsys.readouterr().out


def test_probe_command_fails_when_nothing_can_be_scored(setup: tuple[Path, Path], tmp_path: Path) -> None:
    skills, _ = setup
    empty = tmp_path / "no-tasks"
    write_task(empty, "t", "someone/else", "Fill the pdf.", "- x")
    out = tmp_path / "probe.json"
    assert main(["probe", "--tasks", str(empty), "--skills", str(skills), "--json", str(out)]) == 1
    assert json.loads(out.read_text())["per_task"][0]["reason"] == "source_skill_unknown"


def test_probe_command_errors_on_missing_tasks_folder(tmp_path: Path) -> None:
    code = main(["probe", "--tasks", str(tmp_path / "nope"), "--skills", str(tmp_path), "--json", str(tmp_path / "x")])
    assert code == 2


def test_probe_command_writes_decontamination_report(setup: tuple[Path, Path], tmp_path: Path) -> None:
    skills, tasks = setup
    bench = tmp_path / "bench"
    bench.mkdir()
    long_text = " ".join(f"word{i}" for i in range(60))
    (bench / "b1.txt").write_text(long_text)
    (tasks / "task-pdf-forms" / "instruction.md").write_text("Fill the pdf AcroForm. " + long_text)
    decon = tmp_path / "decon.json"
    args = ["probe", "--tasks", str(tasks), "--skills", str(skills), "--json", str(tmp_path / "p.json"),
            "--benchmark", str(bench), "--decontam-json", str(decon)]
    assert main(args) == 0
    assert json.loads(decon.read_text())["flagged"] == ["task-pdf-forms"]
