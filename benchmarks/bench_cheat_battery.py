"""Hand-written cheap outputs against generated tasks, through the real gate's cheat stage.

Usage:
  .venv/bin/python benchmarks/bench_cheat_battery.py [SHAPE ...] [--keep DIR]

Three offline tasks (an entry audit on csv-dedupe, a run audit on log-triage-awk, a table lookup on
lab-unit-conversion, from examples/skillhub) get a battery of shortcuts written the way an adversarial policy would
write them after reading the instruction, not by the generator: empty outputs, the header only, list everything
(every id × every rule / every attempt × every outcome / every case × every answer the docs' table or
definition list mentions), echo the
example or the colleague's draft, and a forged reward file. The battery replaces solution/cheats/ in a copy of
each task, and `gate_task` runs it like the Oracle (fresh sandbox, verifier with the documented environment).
Prints each cheat's mean reward and per-metric rewards, the gate's verdict, and the generator's own cheats' means
from the unmodified task. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.tasks.builder import TaskBuilder
from skill2env_dagster.tasks.generator import OfflineGenerator, make_context
from skill2env_dagster.tasks.pipeline import build_candidate, task_name
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

REPO = Path(__file__).resolve().parents[1]
FORGE = ("mkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
         "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json\n")

# Shell bodies per shape; each reads only what an agent sees and does none of the skill's work.
BATTERY: dict[str, dict[str, str]] = {
    "entry_audit": {
        "empty": "mkdir -p /app/out; : > /app/out/findings.csv; echo '{}' > /app/out/summary.json\n",
        "header_only": "mkdir -p /app/out; echo id,rule,evidence > /app/out/findings.csv\n",
        "list_everything": (
            "mkdir -p /app/out; echo id,rule,evidence > /app/out/findings.csv\n"
            "for f in $(find /app/register -maxdepth 1 -name '*.csv'); do\n"
            "  tail -n +2 \"$f\" | tr ';' ',' | while IFS=, read -r id a b c rest; do\n"
            "    for r in R1 R2 R3 R4; do for v in \"$a\" \"$b\" \"$c\"; do echo \"$id,$r,$v\"; done; done\n"
            "  done\ndone >> /app/out/findings.csv\n"),
        "sample_echo": ("mkdir -p /app/out; if [ -f /app/out/draft_findings.csv ]; then :; "
                        "elif ls /app/notes/*draft* >/dev/null 2>&1; then cp /app/notes/*draft* /app/out/findings.csv;"
                        " else printf 'id,rule,evidence\\nE999,R1,57\\n' > /app/out/findings.csv; fi\n"),
        "forged": "mkdir -p /app/out; echo id,rule,evidence > /app/out/findings.csv\n" + FORGE,
    },
    "run_audit": {
        "empty": "mkdir -p /app/out; : > /app/out/run_audit.csv\n",
        "header_only": "mkdir -p /app/out; echo attempt,outcome,part > /app/out/run_audit.csv\n",
        "list_everything": (
            "mkdir -p /app/out; echo attempt,outcome,part > /app/out/run_audit.csv\n"
            "for f in /app/attempts/a-*.txt; do a=$(basename \"$f\" .txt)\n"
            "  echo \"$a,ok,\"; echo \"$a,unreadable,\"\n"
            "  for s in 1 2 3 4 5 6 7 8; do echo \"$a,missing,$s\"; echo \"$a,out_of_order,$s\"; done\n"
            "done >> /app/out/run_audit.csv\n"),
        "sample_echo": ("mkdir -p /app/out; echo attempt,outcome,part > /app/out/run_audit.csv\n"
                        "for f in /app/attempts/a-*.txt; do echo \"$(basename \"$f\" .txt),ok,\"; done "
                        ">> /app/out/run_audit.csv\n"),
        "forged": "mkdir -p /app/out; echo attempt,outcome,part > /app/out/run_audit.csv\n" + FORGE,
    },
    "table_cases": {
        "empty": "mkdir -p /app/out; : > /app/out/answers.tsv\n",
        "header_only": "mkdir -p /app/out; printf \"$H\\n\" > /app/out/answers.tsv\n",
        "list_everything": (
            "mkdir -p /app/out; python3 - <<'PY'\nimport csv, re, pathlib\n"
            "cases = [r[0] for r in csv.reader(open('/app/cases/cases.tsv'), delimiter='\\t')][1:]\n"
            "words = set()\nfor p in pathlib.Path('/app/docs').glob('*.md'):\n"
            "    for ln in p.read_text().splitlines():\n"
            "        if ln.startswith('|'):\n"
            "            cells = [c.strip() for c in ln.strip('|').split('|')]\n"
            "            words |= {c for c in cells if c and not re.fullmatch(r':?-+:?', c)}\n"
            "        elif m := re.match(r'- `?[^`:]+`?: (.+)', ln):\n"
            "            words.add(m.group(1).strip())\n"
            "words |= {'unknown'}\n"
            "import os\nrows = [os.environ['H']] + [f'{c}\\t{w}' for c in cases for w in sorted(words)]\n"
            "pathlib.Path('/app/out/answers.tsv').write_text('\\n'.join(rows) + '\\n')\nPY\n"),
        "sample_echo": ("mkdir -p /app/out; python3 - <<'PY'\nimport csv, pathlib\n"
                        "cases = [r[0] for r in csv.reader(open('/app/cases/cases.tsv'), delimiter='\\t')][1:]\n"
                        "import os\npathlib.Path('/app/out/answers.tsv').write_text(os.environ['H'] + '\\n' + "
                        "''.join(f'{c}\\tunknown\\n' for c in cases))\nPY\n"),
        "forged": "mkdir -p /app/out; printf \"$H\\n\" > /app/out/answers.tsv\n" + FORGE,
    },
}
TASKS = {"entry_audit": "csv-dedupe", "run_audit": "log-triage-awk", "table_cases": "lab-unit-conversion"}


def make(shape: str, skill_dir: Path, out: Path) -> Path:
    skill = skill_from_dir(skill_dir)
    plans, axes = plans_and_axes(skill, [shape], "medium")
    s = axes.samples[0]
    wf = next(w for w in plans.workflows if w.name == s.workflow)
    name = task_name(skill, s)
    build_candidate(TaskBuilder(out / name), make_context(skill, wf, s, load_base_images(), name, focus=wf.focus),
                    OfflineGenerator())
    return out / name


def header(task: Path) -> str:
    """The output header the instruction names (`<TAB>` spelled out), as an agent would copy it."""
    m = re.search(r"header `([^`]+)`", (task / "instruction.md").read_text())
    return m.group(1) if m else ""


def with_battery(task: Path, battery: dict[str, str], root: Path) -> Path:
    copy = root / f"{task.name}-battery"
    head = header(task).replace("<TAB>", "\\t")
    shutil.copytree(task, copy)
    shutil.rmtree(copy / "solution" / "cheats", ignore_errors=True)
    (copy / "solution" / "cheats").mkdir(parents=True)
    for name, body in battery.items():
        (copy / "solution" / "cheats" / f"{name}.sh").write_text(f"#!/bin/bash\nset -u\nexport H=$'{head}'\n" + body)
    return copy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="*", help=f"some of {sorted(TASKS)} (default: all)")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    settings = GateSettings(mutation_testing=False)  # the cheats are what is measured here
    with tempfile.TemporaryDirectory(prefix="cheat-battery-") as tmp:
        root = Path(tmp)
        for shape, skill in TASKS.items():
            if args.shapes and shape not in args.shapes:
                continue
            task = make(shape, REPO / "examples" / "skillhub" / skill, root / "tasks")
            own = gate_task(task, settings)
            mine = gate_task(with_battery(task, BATTERY[shape], root), settings)
            print(f"\n{shape} on {skill}: {task.name}\n  gate on the generated task: {own.verdict.value}"
                  f" ({own.reason.value if own.reason else '-'}); its own cheats: "
                  + ", ".join(f"{a.name}={a.mean:.2f}" for a in own.cheats))
            for a in mine.cheats:
                metrics = " ".join(f"{k}={v:.2f}" for k, v in a.metrics.items()) or "reward 0 (no metrics)"
                print(f"  {a.name:22s} mean {a.mean:.2f}  [{a.status}] {metrics}")
            if args.keep:
                shutil.copytree(task, args.keep / task.name, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
