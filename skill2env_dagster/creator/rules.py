"""Every rule that can reject a task, stated to the creator, generated from the gate's own settings and constants.

One `Rule` per check (or per creator limit), carrying the reason codes it can reject with. The texts interpolate
the values the gate and the harness use (thresholds, limits, registries, timeouts, file names), so changing a
setting changes what the creator is told. `rejection_codes()` lists every code the gate and the harness can
reject a candidate with, read from their source; a test checks that each maps to a rule rendered into the
creator's prompt, so no rule the prompt does not state can reject a task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from skill2env_dagster.creator.grounding import DOC_SUFFIXES, QUOTE_MIN_CHARS
from skill2env_dagster.creator.settings import CreatorLimits
from skill2env_dagster.gates import blind, mutants, static_checks
from skill2env_dagster.gates.dockerfile import FORBIDDEN_SOURCES
from skill2env_dagster.gates.reward import MAX_METRICS, MAX_REWARD_BYTES, TOLERANCE
from skill2env_dagster.gates.rubric import MAX_BULLETS
from skill2env_dagster.gates.services import COLLECT_KEY, COMPOSE_FILE
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.gates.solver_run import HELPER_PATH, SOLVER_UID
from skill2env_dagster.gates.tamper import FIXED_PREFIXES
from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS
from skill2env_dagster.reasons import INFRA_CODES, LLM_ENDPOINT_CODES, ReasonCode
from skill2env_dagster.tasks import builder
from skill2env_dagster.tasks.pipeline import AGENT_TIMEOUT_SEC, VERIFIER_TIMEOUT_SEC

C = ReasonCode
MIN_CHEATS = 2
# The naive solvers a blind reviewer writes against every task (review of creator run 2: four tasks gave >= 0.5 on
# a metric to one of them). The creator writes them as its own cheats; one place for the list.
NAIVE_KINDS = (
    ("ignore one condition", "the skill's method with ONE of its conditions dropped: a limit applied to every "
     "category, business days counted as 24 h, the first value used where the skill says the reassessed one, "
     "open or excluded records kept, the default used where the skill says to adjust it"),
    ("substring grep", "items chosen by grepping the inputs for the rule's key words, substring matches"),
    ("count lines", "every number asked for answered by a count of lines, rows or files"),
    ("echo the sample", "the instruction's example, a sample or an input file copied as the answer"),
)
PACKAGE = Path(__file__).resolve().parents[1]
# Where rejections come from: the gate, the task builder, the creator harness and the pipeline around them.
REJECTING_SOURCES = ("gates", "tasks/builder.py", "tasks/pipeline.py", "creator")
# Codes that are never a verdict on the task: a broken machine or endpoint (status `error`, retried), or a skill
# that is not built at all.
NOT_VERDICTS = INFRA_CODES | LLM_ENDPOINT_CODES | {C.LLM_REQUEST_REJECTED, C.LLM_SCHEMA_VIOLATION, C.NOT_ELIGIBLE,
                                                  C.NO_CHECKABLE_RULE}


@dataclass(frozen=True)
class Rule:
    codes: tuple[ReasonCode, ...]
    stage: str  # "static" | "runtime" | "robustness" | "creator"
    text: str

    def render(self) -> str:
        return f"- [{', '.join(c.value for c in self.codes) or 'refused by the harness'}] {self.text}"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def _static(s: GateSettings) -> list[Rule]:
    registries = ", ".join(s.approved_registries)
    forbidden = ", ".join(FORBIDDEN_SOURCES)
    return [
        Rule((C.STATIC_VALIDATION_FAILED,), "static",
             "Layout: instruction.md, environment/Dockerfile, tests/test.sh, tests/rubric.md and solution/solve.sh "
             "must exist as regular files (task.toml is written by the harness); no rubric.md at the task root; "
             "no file named reward.txt or reward.json anywhere in the task. Every symlink must resolve inside its "
             "own top-level folder and exist. test.sh, solve.sh, wrong.sh and every cheat must start with a "
             "shebang line (#!) and, when a shell script, parse under `bash -n`. "
             f"COPY/ADD in the Dockerfile may not leave the build context (no `..`, no absolute source), fetch "
             f"URLs, or use a source path any part of which contains one of: {forbidden} (a substring match: "
             f"'contests.csv' counts). environment/{COMPOSE_FILE}, if present, uses only the stand-in service "
             f"subset: services other than `main` with `build: .`, `network_mode: \"service:main\"`, an optional "
             f"exec healthcheck and `{COLLECT_KEY}` files for the verifier."),
        Rule((C.STATIC_VALIDATION_FAILED,), "static",
             "tests/rubric.md has exactly the sections `## Must-do`, `## Must-avoid` and `## Best-practice`, each "
             f"with 1 to {MAX_BULLETS} bullets (`- ...`); any other non-indented line is an error."),
        Rule((C.BASE_IMAGE_POLICY,), "static",
             f"Every FROM names an image of an approved registry ({registries}) pinned by sha256 digest, with no "
             "`$` variable: use one of the FROM lines given in the brief, verbatim."),
        Rule((C.CONTAMINATED,), "static",
             f"No leak: no line of {static_checks.LEAK_MIN_LINE} or more characters (after trimming) of any file "
             "in tests/ or solution/ (tests/rubric.md and solution/cheats/ excepted) may appear in instruction.md "
             "or in any file of environment/. A generator in tests/ that repeats lines of a build script or "
             "fixture in environment/ is a leak: share no long lines between what the solver sees and the "
             "grading. No file but task.toml may contain the skill's bundle digest or its namespaced id (the "
             "brief names them when they apply)."),
        Rule((C.TASK_TOO_LARGE,), "static",
             f"Size: one file at most {_mib(builder.MAX_FILE_BYTES)}, the whole task at most "
             f"{_mib(builder.MAX_TASK_BYTES)} (the gate's own limit is {_mib(static_checks.MAX_TASK_BYTES)}, "
             f"environment/ at most {_mib(static_checks.MAX_ENV_BYTES)})."),
        Rule((C.WORKFLOW_MISMATCH,), "static",
             "The task exercises the workflow it is filed under: at least one rule of the blueprint must cite a "
             "line of a skill file the workflow was planned on (task.toml's workflow_sources, written from the "
             "plan)."),
        Rule((C.GRADING_MODIFIED,), "static",
             "After the freeze, environment/, instruction.md and tests/ never change (their hash is recorded in "
             "task.toml and checked again); the harness refuses such edits."),
    ]


def _runtime(s: GateSettings) -> list[Rule]:
    cap = f", capped at {s.timeout_cap_sec:g} s by this gate" if s.timeout_cap_sec else ""
    network = "no network" if s.build_network == "none" else f"network {s.build_network}"
    wrong = ("solution/wrong.sh is optional; when present it must finish in time and score below 1 on at least "
             "one metric (a plausible near-miss that ignores one rule of the instruction)." if s.run_wrong else
             "solution/wrong.sh is not run by this gate.")
    return [
        Rule((C.BUILD_FAILED, C.IMAGE_LEAKS_GRADING), "runtime",
             f"The image is built from environment/ alone with {network}: nothing can be installed or downloaded "
             "at build time beyond the base image and your files. The image must not contain /tests or /solution."),
        Rule((C.ORACLE_FAILED, C.ORACLE_TIMEOUT), "runtime",
             "Oracle: in a fresh container (working directory /app, no network, "
             f"{s.memory_mb} MB memory, {s.cpus:g} CPU, {s.pids_limit} processes, /tmp a {s.tmp_mb} MB tmpfs) "
             f"solution/solve.sh runs within {AGENT_TIMEOUT_SEC:g} s{cap}; then tests/test.sh must give every "
             f"metric 1 (within {TOLERANCE:g}). A solve.sh that changes the verifier's toolchain (see tamper) "
             "scores 0."),
        Rule((C.REWARD_MISSING, C.REWARD_EMPTY, C.REWARD_INVALID, C.VERIFIER_TIMEOUT), "runtime",
             f"Reward contract: tests/test.sh (copied to /tests only after the solver finished) runs within "
             f"{VERIFIER_TIMEOUT_SEC:g} s{cap} and writes /logs/verifier/reward.json: a flat JSON object of 1 to "
             f"{MAX_METRICS} named metrics (2 to {MAX_METRICS} recommended, each an independent check), every value "
             f"a finite number in [0, 1], at most {MAX_REWARD_BYTES // 1024} KiB. Its exit code is ignored: write "
             "the file on every path (a trap on EXIT), all zeros when the output is missing. Fractional credit is "
             "computed, never judged. tests/test.sh must be a shell script (#!/bin/bash or #!/bin/sh): at the "
             "freeze the harness puts a fixed guard right after its shebang which, before your grading runs, kills "
             "every process left in the container (whatever the solver left running) but the verifier's own and "
             "removes any reward file already there; so test.sh needs no kill step of its own and must not rely on "
             "a process started before it."),
        Rule((C.NOP_FAILED,), "runtime",
             "No-op: tests/test.sh on the untouched environment (nobody did anything) must give every metric 0."),
        Rule((C.WRONG_SOLUTION_PASSED, C.WRONG_SOLUTION_TIMEOUT), "runtime", wrong),
        Rule((C.SERVICE_FAILED,), "runtime",
             f"A stand-in service must answer its healthcheck within {s.service_start_sec:g} s and keep running."),
    ]


def _robustness(s: GateSettings, limits: CreatorLimits) -> list[Rule]:
    t = s.shortcut_threshold
    out = []
    if s.mutation_testing:
        out += [
            Rule((C.SHORTCUT_PASSED,), "robustness",
                 "Trivial mutants of the Oracle's outputs (every file solve.sh created or changed outside /tmp, "
                 f"up to {s.max_output_files} files), applied to every output at once as a no-work answer would "
                 "be: `empty` (every output emptied), `header_only` (data cut to its header, or to its first "
                 f"record when that is at most {mutants.TRIVIAL_FRACTION:.0%} of the records), `junk` (same "
                 f"structure and keys, every value replaced), `superset` (the Oracle's records plus "
                 f"{mutants.JUNK_FACTOR}x as many junk records in every list output, other outputs emptied). "
                 f"Each must score a mean reward of at most {t:g} over the metrics. A verifier that grades each "
                 "section of one output by its own metric must still fail these."),
            Rule((C.VERIFIER_INSENSITIVE,), "robustness",
                 "Destructive mutants, one output at a time: `drop_half` (every second record the Oracle wrote "
                 "dropped), `perturb_numbers` (every number changed), `swap_values[i]` (field i rotated across the "
                 "records; rejects only when every field's rotation goes unnoticed), `delete_file` (the largest "
                 "file of a produced folder). Each must score below the Oracle on at least one metric. An output "
                 "the verifier does not grade at all (emptying it alone changes nothing) is exempt. "
                 "`reorder` and `duplicate` are information only."),
        ]
    if s.mutation_testing and s.blind_baselines:
        out.append(Rule((C.SKILL_BLIND_BASELINE_PASSED,), "robustness", battery_rule()))
    if s.run_cheats:
        out.append(Rule((C.SHORTCUT_PASSED, C.TAMPER_DETECTED), "robustness",
                        f"Each solution/cheats/<name>.sh runs from the untouched environment like a solution and "
                        f"must score a mean reward of at most {t:g}. A cheat or wrong.sh caught changing the "
                        "verifier's toolchain scores 0 and its other work is verified again without the tamper "
                        "(it still must not pass); when that work cannot be carried over, the task fails "
                        "(tamper_detected): let cheats and wrong.sh write only answers, never tools."))
    if s.tamper_kit:
        protected = ", ".join(FIXED_PREFIXES)
        out.append(Rule((C.TAMPER_VULNERABLE,), "robustness",
                        "Tamper kit: (1) forge: reward.json/reward.txt written in advance, a detached process "
                        "re-writing them, and Python modules named like the stdlib (json.py, csv.py, re.py, ...) "
                        "and like every module tests' Python files import, planted in /app; the verifier must "
                        "still give 0 on the untouched environment. So test.sh must not run Python with /app on "
                        "its module path (no `cd /app && python3 -c/-m`; run `python3 /tests/check.py`) and must "
                        "not trust any file a solver could pre-write. (2) plant: every tool test.sh calls is "
                        "shadowed earlier on PATH and at its resolved path, Python start-up hooks and .pth files "
                        "are planted, /etc/ld.so.preload is written, a file is put under /tests; every planted "
                        f"path must lie in a protected place ({protected}, /lib*, the image's PATH directories, "
                        "any site-packages), so test.sh may call only programs of the image's toolchain or of "
                        "/tests, never a program under /app or another path the solver can write. (3) site hooks: "
                        "a .pth file and a sitecustomize.py that rewrite the reward when Python exits are planted "
                        "in every site-packages folder of the image's Pythons, and test.sh then runs as Harbor runs "
                        "it, with no tamper check: the reward must stay 0. So run every Python in test.sh as "
                        "`python3 -I -S` (-S: no site, so neither hook loads; -I alone still loads them)."))
    if s.answer_key_probe:
        out.append(Rule((C.ANSWER_KEY_READABLE,), "robustness", answer_key_rule()))
    return out


def answer_key_rule() -> str:
    """The `answer_key` stage (gates/answer_key.py) and the helper that satisfies it (gates/solver_run.py)."""
    return (f"Answer key out of reach of solver code: a verifier that runs a program the solver wrote or could "
            f"change (a script, bot, CLI or module under /app or written by solve.sh) must run it through "
            f"`{HELPER_PATH} [-w DIR]... [-r DIR]... -- COMMAND [ARG]...` (the harness writes this helper into "
            f"tests/; do not edit it): it runs COMMAND as uid {SOLVER_UID}, which cannot read {CONTAINER_TESTS} "
            f"or {CONTAINER_SOLUTION} (it makes both 0700) nor write the reward; `-w DIR` makes a folder writable "
            "for it, `-r DIR` readable. So copy each hidden input to a fresh folder (mktemp -d) and pass that "
            "with -r/-w, run the command from that folder (not from /tests), never import solver code into the "
            "verifier's own process, never let solver code read anything under /tests, never copy expected "
            "answers where it can read them. The same holds for solver SQL or any other code the verifier "
            "executes: run its interpreter through the helper too (e.g. the python3 script that executes the "
            "solver's query), or at least deny ATTACH and file access to it. The gate checks it: in the Oracle's "
            "final state it plants a probe into every Python, shell and #! script of the working directory and "
            "every such file solve.sh wrote, runs tests/test.sh, and rejects the task (`answer_key_readable`) if "
            f"any probe could read a file under {CONTAINER_TESTS} or {CONTAINER_SOLUTION}.")


def _creator(limits: CreatorLimits) -> list[Rule]:
    return [
        Rule((C.CREATOR_CONTRACT_FAILED,), "creator",
             "The blueprint's metrics are exactly the metrics test.sh writes (checked at freeze by a no-op run); "
             "the harness refuses a freeze whose draft breaks a static rule or whose no-op is not all 0."),
        Rule((C.CREATOR_BUDGET_EXHAUSTED,), "creator",
             f"Budget per candidate: {limits.max_turns} model turns, {limits.max_total_tokens:,} tokens (prompt + "
             f"completion over all turns), {limits.max_wall_sec:g} s of wall time. Out of budget before the freeze "
             "(or before solve.sh exists) the candidate is rejected; after it, the gate decides on what exists."),
        Rule((C.SHORTCUT_PASSED,), "creator", own_cheats_rule(limits)),
        Rule((C.CREATOR_LOOP,), "creator",
             f"The same tool call failing {limits.loop_limit} times in a row with no change to the draft in "
             "between ends the candidate."),
        Rule((C.CREATOR_INCOMPLETE,), "creator",
             f"Replying without a tool call before the task is submitted gets a reminder ({limits.nudges} at "
             "most); one more such reply ends the candidate."),
    ]


def naive_kinds() -> str:
    return "; ".join(f"({i}) {name}: {what}" for i, (name, what) in enumerate(NAIVE_KINDS, 1))


def own_cheats_rule(limits: CreatorLimits) -> str:
    trial = (f" The freeze is refused until `check` with `reference_solution` and at least {MIN_CHEATS} `cheats` "
             "that do work has retained the draft as it is now (no change since): your naive cheats run through "
             "the whole gate and are judged per metric while tests/ can still change. A cheat does work when its "
             "run leaves at least one non-empty file changed on the container's disk (outside /tmp, /logs, /tests "
             "and /solution; the report lists them): an empty or no-op cheat tests nothing and does not count."
             if limits.strict else
             " Before the freeze, pass them as `cheats` to `check` with `reference_solution`.")
    return ("Your cheats (at least " f"{MIN_CHEATS}) are the naive solvers a blind reviewer will write against the "
            "task, not only empty or junk answers: one for each of these kinds that applies, " + naive_kinds()
            + f". Each is judged metric by metric: {blind.THRESHOLD:g} or more on ANY metric rejects the task "
            "(`cheats_per_metric`), whatever its mean. So every metric must give less than "
            f"{blind.THRESHOLD:g} to a solver that ignores any one of the skill's conditions: an F1 or share over "
            "items most of which no condition decides pays for shallow work; make most graded items depend on "
            "the skill's conditions, or give a metric credit only when the condition-decided items are right."
            + trial)


def grounding_rules() -> list[Rule]:
    """About this skill, not about the task's own spec (creator/grounding.py enforces the mechanical part)."""
    docs = ", ".join(sorted(DOC_SUFFIXES))
    return [
        Rule((), "creator",
             "Deciding rules come from the skill: the answer must be decided by rules, defaults, thresholds and "
             "pitfalls stated in the skill's own files, each cited in the blueprint (path:line). Thresholds, word "
             "lists, categories or scoring tables that you invent make it a spec-coding task and may not be the "
             "deciding rules (where the skill leaves a value open, choose a task where it does not matter). "
             "set_blueprint is refused when a rule's statement contains a number that its cited lines do not."),
        Rule((), "creator",
             "The world does not hand over the skill: no policy, standard or playbook file in environment/ "
             "restates or paraphrases the skill's rules; the world holds the facts the rules apply to (records, "
             "configs, logs, code). The instruction names the goal and the output and, since the solver never "
             "gets the skill, states each condition the tests grade as a requirement in your own words (a graded "
             "rule the instruction leaves to the skill is a hidden rule), never the skill's text or its method's "
             "steps. The freeze is refused when "
             f"instruction.md or a file of environment/ repeats a line of the skill's documents ({docs}) of "
             f"{QUOTE_MIN_CHARS} or more characters (markup, case and spacing ignored)."),
    ]


def gate_rules(settings: GateSettings, limits: CreatorLimits) -> list[Rule]:
    """Every rule, in the order the gate applies them, then the creator's own limits."""
    return [*_static(settings), *_runtime(settings), *_robustness(settings, limits), *_creator(limits),
            *(grounding_rules() if limits.strict else [])]


def render_rules(settings: GateSettings, limits: CreatorLimits) -> str:
    return "\n".join(r.render() for r in gate_rules(settings, limits))


def disclosed_codes(settings: GateSettings, limits: CreatorLimits) -> set[ReasonCode]:
    return {c for r in gate_rules(settings, limits) for c in r.codes}


def rejection_codes(root: Path = PACKAGE) -> set[ReasonCode]:
    """Every reason code the gate, the builder, the pipeline and the creator harness name in their source, except
    those that are never a verdict on the task (NOT_VERDICTS)."""
    found: set[str] = set()
    for rel in REJECTING_SOURCES:
        path = root / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.resolve() == Path(__file__).resolve():
                continue  # this module names every code it discloses; the point is the code that rejects
            found.update(re.findall(r"ReasonCode\.([A-Z_]+)", f.read_text(encoding="utf-8")))
            found.update(re.findall(r"\bC\.([A-Z_]+)\b", f.read_text(encoding="utf-8")))
    codes = {ReasonCode[name] for name in found if name in ReasonCode.__members__}
    return codes - NOT_VERDICTS


def battery_rule() -> str:
    """The skill-blind battery as it runs (gates/blind.py): its baselines' names and descriptions come from the
    battery itself, and what each keeps of the Oracle's answer is said, since that decides which metrics it
    passes. Also offered before the freeze by `check` with a draft reference solution."""
    named = "; ".join(f"`{b.name}` ({b.description})" for b in blind.BASELINES)
    return (
        "Skill-blind baselines: generic tools that never read the skill. They read the text files under the image's "
        "working directory (an SQLite file there as one CSV table per SQL table) and write every output the Oracle "
        "wrote, in its format. For a data output (CSV/TSV, JSON, YAML, JSON lines, one item per line, or an SQLite "
        "table) whose records name input items in one field (a file or folder path in any form, a value of an "
        "input table's column, or a token shaped like the Oracle's, e.g. T-104), each writes one record per item "
        "it chooses, with that item in that field and every other field filled from the Oracle's own answer: the "
        "value the Oracle wrote most often in that field, unless the baseline fills it itself: " + named
        + f"; `grep[w]`/`grep_not[w]` (items with/without each of up to {blind.GREP_WORDS} frequent words of the "
        "inputs). An SQLite database the Oracle edits in place gets the chosen rows' changed columns updated and "
        "nothing else. A prose output gets alarm-word grep hits or every table's first column. An answer of "
        "numbers with no item field (a count, a map of totals) gets `count[...]`: the Oracle's answer with EVERY "
        "number replaced by one count a blind tool would give (lines of the largest inputs, with and without a "
        "header, input files, table rows) and everything else - keys, labels, text - kept exactly as the Oracle "
        "wrote it. `echo_input[n]` copies an input file with the output's suffix. An output they cannot write (a "
        "program, another binary) is left empty; a file the Oracle modified goes back to its input version. "
        f"Each baseline must score below {blind.THRESHOLD:g} on EVERY metric (one metric at {blind.THRESHOLD:g} or "
        "more rejects). So a metric that reads only the item field, only the labels, or (for a numeric answer) "
        "no number passes them: make the skill's rules and conditions decide which items are reported and which "
        "values they get, and grade both. Before the freeze, `check` with `reference_solution` runs them on your "
        "draft.")

