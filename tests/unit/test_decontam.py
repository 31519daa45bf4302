"""Decontamination: Jaccard for near-copies, containment for a short benchmark task pasted into a long one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from skill2env_dagster.export.decontam import (
    TextDoc,
    check_contamination,
    decontaminate,
    load_benchmark_docs,
    ngrams,
)
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.reasons import InputError, ReasonCode

VOCAB = [f"w{i}" for i in range(3000)]


def text(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(n))


BENCH_SHORT = text(1, 40)  # a short benchmark task
BENCH_LONG = text(2, 200)


def harbor_task(root: Path, name: str, instruction: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "instruction.md").write_text(instruction)
    (root / name / "task.toml").write_text('[metadata]\nsource_skill = "hub/x"\n')


def test_containment_catches_embedded_task_that_jaccard_misses() -> None:
    ours = TextDoc("embedded", text(3, 300) + " " + BENCH_SHORT + " " + text(4, 300))
    report = check_contamination([ours], [TextDoc("bench/short", BENCH_SHORT)], DecontamConfig())
    match = report.matches[0]
    assert match.jaccard < 0.8  # Jaccard alone would let it through ...
    assert match.containment == 1.0  # ... the whole benchmark task is inside ours
    assert report.flagged == ["embedded"] and match.reason == ReasonCode.CONTAMINATED
    jaccard_only = check_contamination([ours], [TextDoc("b", BENCH_SHORT)], DecontamConfig(containment_threshold=1.0))
    assert jaccard_only.flagged == ["embedded"]  # containment 1.0 still reaches a threshold of 1.0
    strict = DecontamConfig(containment_threshold=1.0, jaccard_threshold=0.8)
    half = TextDoc("half", text(3, 300) + " " + " ".join(BENCH_SHORT.split()[:26]))
    assert check_contamination([half], [TextDoc("b", BENCH_SHORT)], strict).flagged == []


def test_near_copy_flagged_by_jaccard_and_unrelated_task_kept() -> None:
    words = BENCH_LONG.split()
    near = " ".join([*words[:-2], "changed", "ending"])
    report = check_contamination(
        [TextDoc("near", near), TextDoc("unrelated", text(9, 200))],
        [TextDoc("bench/long", BENCH_LONG)],
        DecontamConfig(containment_threshold=1.0),
    )
    assert report.flagged == ["near"]
    assert report.matches[0].jaccard >= 0.8
    assert all(m.task_id != "unrelated" for m in report.matches)


def test_case_and_punctuation_do_not_hide_a_copy() -> None:
    shouted = BENCH_SHORT.upper().replace(" ", ", ")
    assert check_contamination([TextDoc("t", shouted)], [TextDoc("b", BENCH_SHORT)], DecontamConfig()).flagged == ["t"]


def test_short_texts_are_reported_not_silently_passed() -> None:
    report = check_contamination([TextDoc("tiny", "fix the bug")], [TextDoc("b", "a b c")], DecontamConfig())
    assert report.too_short == ["b", "tiny"] and report.flagged == []


def test_benchmark_folders_harbor_and_plain_text(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    harbor_task(bench, "tb-task-1", BENCH_LONG)
    (bench / "tb-task-1" / "notes.md").write_text("not a benchmark document of its own")
    (bench / "plain").mkdir()
    (bench / "plain" / "q1.txt").write_text(BENCH_SHORT)
    single = tmp_path / "one.txt"
    single.write_text("x")
    docs = load_benchmark_docs([bench, single])
    assert [d.doc_id for d in docs] == ["bench/tb-task-1", "bench/plain/q1.txt", "one.txt"]

    ours = tmp_path / "ours"
    harbor_task(ours, "copied", BENCH_LONG)
    harbor_task(ours, "fresh", text(11, 100))
    report = decontaminate(ours, DecontamConfig(benchmark_paths=[str(bench)]))
    assert report.flagged == ["copied"] and report.n_tasks == 2 and report.n_benchmark_docs == 2


def test_terminal_bench_task_yaml_is_read(tmp_path: Path) -> None:
    (tmp_path / "tb" / "old-task").mkdir(parents=True)
    (tmp_path / "tb" / "old-task" / "task.yaml").write_text(f"instruction: |\n  {BENCH_SHORT}\ndifficulty: hard\n")
    docs = load_benchmark_docs([tmp_path / "tb"])
    assert [(d.doc_id, d.text.strip()) for d in docs] == [("tb/old-task", BENCH_SHORT)]
    (tmp_path / "tb" / "old-task" / "task.yaml").write_text("instruction: [unclosed")
    with pytest.raises(InputError, match="not valid YAML"):
        load_benchmark_docs([tmp_path / "tb"])


def test_missing_benchmark_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_benchmark_docs([tmp_path / "nope"])


def test_ngrams_are_word_13_grams() -> None:
    assert len(ngrams(text(5, 13), 13)) == 1
    assert len(ngrams(text(5, 20), 13)) == 8
    assert ngrams(text(5, 12), 13) == set()
