"""What the model-backed creator sends: prompt size per step, and how many skills its blueprint can cite.

Usage:
  .venv/bin/python benchmarks/bench_llm_prompts.py [CORPUS_DIR]

Part 1 drives the real LLMGenerator through the builder against the loopback fake server with the canned task of
the tests (examples/skillhub skills) and prints the characters of each step's messages (system + user, the JSON
schema instruction included). Part 2 (when CORPUS_DIR, e.g. ../shared/corpus/skills, is given) prints, over every
SKILL.md under it, how many skills offer at least one extracted line the blueprint can cite (else
`no_checkable_rule`), the median number offered (cap 60) and the characters of the quoted skill files. Figures
only; nothing is asserted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import make_context
from skill2env_dagster.tasks.llm_blueprint import MAX_ITEMS, knowledge_lines, skill_files
from skill2env_dagster.tasks.llm_generator import LLMGenerator
from skill2env_dagster.tasks.pipeline import build_candidate, task_name
from tests.support.fake_openai import FakeOpenAI
from tests.unit.task_helpers import plans_and_axes, skill_from_dir
from tests.unit.task_llm_support import StepResponder, schema_name

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "skillhub"
PINS = {"minimal": "127.0.0.1:5000/s2e-minimal@sha256:" + "a" * 64,
        "python": "127.0.0.1:5000/s2e-python@sha256:" + "b" * 64}


def prompt_sizes(name: str) -> dict[str, int]:
    skill = skill_from_dir(EXAMPLES / name)
    plans, axes = plans_and_axes(skill)
    s = axes.samples[0]
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    with FakeOpenAI(StepResponder()) as srv, tempfile.TemporaryDirectory() as d:
        gen = LLMGenerator(LLMClient(LLMConfig(base_url=srv.base_url, model="m", cache_dir="")), "m", "pv")
        build_candidate(TaskBuilder(Path(d) / "t"), make_context(skill, wf, s, PINS, task_name(skill, s)), gen)
        return {schema_name(r.body): sum(len(m["content"]) for m in r.body["messages"]) for r in srv.requests}


def corpus(root: Path) -> None:
    lines, files, none, skipped = [], [], [], 0
    for folder in sorted(p.parent for p in root.rglob("SKILL.md")):
        try:
            skill = skill_from_dir(folder, "corpus")
        except (ValueError, TypeError):  # a front matter the test helper cannot read; the crawler reports it
            skipped += 1
            continue
        k = extract_knowledge(skill)
        n = len(knowledge_lines(k))
        lines.append(n)
        files.append(len(skill_files(skill, k)))
        if not n:
            none.append(skill.skill_id)
    print(f"corpus: {len(lines)} skills ({skipped} unreadable by the helper); with >= 1 citable line: "
          f"{sum(n > 0 for n in lines)}; median lines offered {statistics.median(lines)} (cap {MAX_ITEMS}, reached by "
          f"{sum(n >= MAX_ITEMS for n in lines)}); quoted skill files: median {statistics.median(files):.0f} chars, "
          f"max {max(files)}")
    print(f"no citable line: {none}")


def main() -> None:
    for name in ("log-triage-awk", "csv-dedupe", "inventory-api-client"):
        print(name, prompt_sizes(name))
    if len(sys.argv) > 1:
        corpus(Path(sys.argv[1]))


if __name__ == "__main__":
    main()
