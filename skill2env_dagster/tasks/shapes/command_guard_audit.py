"""audit_report / evidence_traceability: agent session transcripts checked against the commands a skill blocks.

The skill lists the command patterns its guard blocks ("`git push` (all variants including `--force`)",
"`git branch -D`", "`git checkout .`"). The transcripts are the artifact such a guard works on: an agent's tool
calls, one JSON line each, with the shell command it ran. The answer names every call the guard must block and the
pattern that blocks it; the near misses are the pattern's conditions read strictly - the subcommand as an argument
(`git help push`), a flag in the other case (`git branch -d`), another argument than the blocked one (`git
checkout src/app.py`), the pattern quoted in a message (`echo "git push"`), and blocked commands chained after
harmless ones (`git add -A && git push`).
"""

from __future__ import annotations

import json
import random
import re
import shlex
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.docs import SkillText
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.request import Request, render
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec
from skill2env_dagster.tasks.predicates.commands import matches, simple_commands
from skill2env_dagster.tasks.shapes.base import Design, ShapeInput, solver_script
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, lowest_over, lowest_per_label

SESSIONS = "/app/transcripts"
OUT = "/app/out/blocked_calls.csv"
HEADER = "session,call_id,pattern"
SAFE = ("ls -la", "cat README.md", "npm test", "pytest -q", "make build", "grep -rn TODO src", "python3 -m venv .venv",
        "sed -n '1,40p' src/app.py", "wc -l src/*.py", "echo done")
SAFE_SUB = ("status", "diff --stat", "log --oneline -5", "fetch origin", "show HEAD --stat", "add -A",
            "commit -m 'Fix flaky test'", "stash list", "rev-parse HEAD", "tag -l")
ARGS = ("origin main", "origin feature/login", "HEAD~1", "old-feature", "--quiet", "src/app.py")

LOADER = '''
def load():
    rows = read_table(OUT, ["session", "call_id", "pattern"])
    return None if rows is None else {"rows": [r + ("",) * (3 - len(r)) for r in rows]}
'''

SOLVER = r'''
import json, pathlib, shlex

SPEC = json.loads(__SPEC__)


def simple_commands(line):
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    out = [[]]
    for tok in lexer:
        if tok in ("&&", "||", ";", "|", "&"):
            out.append([])
        else:
            out[-1].append(tok)
    return [c for c in out if c]


def matches(words, pattern):
    if not words or words[0] != pattern[0]:
        return False
    sub = next((w for w in words[1:] if not w.startswith("-")), None)
    return sub == pattern[1] and all(w in words[1:] for w in pattern[2:])


rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("*.jsonl")):
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") != "tool_use" or event.get("name") != "Bash":
            continue
        for words in simple_commands(event["input"]["command"]):
            hit = next((p for p in SPEC["patterns"] if matches(words, p["words"])), None)
            if hit:
                rows.append((path.stem, event["id"], hit["text"]))
                break
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("session,call_id,pattern\n" + "".join(f"{s},{c},{p}\n" for s, c, p in rows))
'''

# The naive reading: a substring search for each pattern in the whole command line.
NAIVE = r'''
import json, pathlib

SPEC = json.loads(__SPEC__)
rows = []
for path in sorted(pathlib.Path(SPEC["dir"]).glob("*.jsonl")):
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") != "tool_use":
            continue
        cmd = event["input"]["command"]
        hit = next((p for p in SPEC["patterns"] if p["text"] in cmd), None)
        if hit:
            rows.append((path.stem, event["id"], hit["text"]))
out = pathlib.Path(SPEC["out"])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("session,call_id,pattern\n" + "".join(f"{s},{c},{p}\n" for s, c, p in rows))
'''


# A program's option that may come before its subcommand without a separate value ("git --no-pager push").
GLOBAL_OPTION = {"git": "--no-pager", "kubectl": "--context=staging", "docker": "--debug", "npm": "--silent",
                 "terraform": "-chdir=infra", "helm": "--debug"}


def _blocked(words: list[str], rng: random.Random) -> str:
    """A command the pattern blocks: its words with some of the arguments such calls carry."""
    extra = [] if words[-1] in (".",) else rng.sample(ARGS[:4], rng.randrange(0, 2))
    return shlex.join([*words, *extra])


def _near(words: list[str], rng: random.Random) -> list[tuple[str, str]]:
    """Commands that look like the pattern but that its words, read strictly, do not block, each with the condition
    it tests (a chain inside quotes is one word of an `echo`, so splitting the line at `&&` without its quoting finds
    the pattern there)."""
    prog, sub, rest = words[0], words[1], words[2:]
    out = [(shlex.join([prog, "help", sub]), "the subcommand, not an argument"),
           (f"echo {shlex.quote('do not run ' + ' '.join(words))}", "a command, not a message"),
           (f"echo {shlex.quote('tests pass && ' + ' '.join(words))}", "shell quoting")]
    for i, w in enumerate(rest):
        if re.fullmatch(r"-[A-Za-z]", w):
            out.append((shlex.join([prog, sub, *rest[:i], w.swapcase(), *rest[i + 1:], rng.choice(ARGS[2:5])]),
                        "letter case"))
        elif not w.startswith("-"):
            out.append((shlex.join([prog, sub, *rest[:i], rng.choice(("src/app.py", "README.md")), *rest[i + 1:]]),
                        "every word of the pattern"))
    return out


def plant(patterns: list[dict[str, Any]], n_sessions: int,
          rng: random.Random) -> tuple[list[list[tuple[str, str]]], dict[str, list[str]]]:
    """Sessions of (call id, command): every pattern blocked at least once (one of them chained after harmless
    commands), its near misses spread over the sessions, harmless calls around them; and the calls planted to test
    each condition of the matching ('session|call_id', what `every_condition` grades)."""
    calls: list[tuple[str, str]] = []
    for p in patterns:
        words = p["words"]
        calls.append((_blocked(words, rng), ""))
        if words[0] in GLOBAL_OPTION:  # an option before the subcommand: still the blocked subcommand
            calls.append((shlex.join([words[0], GLOBAL_OPTION[words[0]], *words[1:]]), "an option before it"))
        calls += _near(words, rng)
    chained = rng.choice(patterns)["words"]
    calls.append((f"{rng.choice(SAFE)} && {_blocked(chained, rng)}", "a chain of commands"))
    prog = patterns[0]["words"][0]
    calls += [(f"{prog} {rng.choice(SAFE_SUB)}", "") for _ in range(len(patterns) + 2)]
    calls += [(rng.choice(SAFE), "") for _ in range(len(patterns))]
    rng.shuffle(calls)
    sessions: list[list[tuple[str, str]]] = [[] for _ in range(n_sessions)]
    conditions: dict[str, list[str]] = {}
    for i, (cmd, condition) in enumerate(calls):
        call_id = f"toolu_{rng.randrange(16 ** 8):08x}"
        sessions[i % n_sessions].append((call_id, cmd))
        if condition:
            conditions.setdefault(condition, []).append(f"session-{i % n_sessions + 1:02d}|{call_id}")
    return sessions, conditions


def render_session(calls: list[tuple[str, str]], rng: random.Random) -> str:
    """One transcript as JSON lines: the agent's text, its Bash tool calls and their results."""
    lines = [json.dumps({"type": "text", "role": "user", "text": "Please finish the change on this branch."})]
    for call_id, cmd in calls:
        lines.append(json.dumps({"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": cmd}}))
        lines.append(json.dumps({"type": "tool_result", "tool_use_id": call_id,
                                 "content": rng.choice(["", "ok", "Already up to date.", "1 file changed"])}))
    return "\n".join(lines) + "\n"


def blocked_by(cmd: str, patterns: list[dict[str, Any]]) -> str | None:
    for words in simple_commands(cmd):
        hit = next((p for p in patterns if matches(words, p["words"])), None)
        if hit:
            return str(hit["text"])
    return None


class CommandGuardAudit:
    name = "command_guard_audit"
    archetype = "audit_report"
    verifier = "evidence_traceability"
    family = "commands"
    kinds = frozenset({"command"})
    max_preds = 1
    effects = frozenset({"boundary", "distractor", "rule_in_docs"})

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        patterns = p.params["patterns"]
        rng = inp.rng("sessions")
        n_sessions = 3 + inp.level
        sessions, conditions = plant(patterns, n_sessions, rng)
        files: dict[str, str | bytes] = {}
        expected_rows: list[list[str]] = []
        for i, calls in enumerate(sessions):
            name = f"session-{i + 1:02d}"
            files[f"app/transcripts/{name}.jsonl"] = render_session(calls, rng)
            expected_rows += [[name, cid, hit] for cid, cmd in calls if (hit := blocked_by(cmd, patterns))]
        doc = f"/app/docs/{re.sub(r'[^a-z0-9]+', '-', inp.text.name.lower()).strip('-')}-blocked-commands.md"
        files[doc.lstrip("/")] = self._excerpt(inp.text, p)
        n_calls = sum(len(c) for c in sessions)
        if not expected_rows or len(expected_rows) * 2 >= n_calls:
            raise ValueError("the sessions give no blocked call or too many")
        expected = {"blocked": sorted(expected_rows), "patterns": [str(x["text"]) for x in patterns],
                    "conditions": conditions}
        spec = {"dir": SESSIONS, "out": OUT, "patterns": patterns}
        metrics = [
            lowest_per_label('EXPECTED["blocked"]', '[r[:3] for r in out["rows"]]', 2, "patterns", "blocked_calls",
                             "The lowest, over the blocked patterns, of the Jaccard of the reported (session, "
                             "call_id, pattern) rows under that pattern with the calls it blocks (a harmless call "
                             "listed, one listed twice or under another pattern, costs as much as a missed one), "
                             "times the share of rows naming a pattern of the list.", [p.id]),
            lowest_over("conditions", 'EXPECTED["blocked"]', '[r[:3] for r in out["rows"]]', 2, "every_condition",
                        "The lowest, over the matching's conditions (the subcommand, not an argument; a command, not "
                        "a message; shell quoting; letter case; every word of the pattern; an option before the "
                        "subcommand; a chain of commands), of the Jaccard of the rows about the calls planted to "
                        "test that condition (1 when none of them is blocked and none is reported).", [p.id]),
        ]
        check = CheckScript(LOADER, metrics, {"SEP": '","', "OUT": repr(OUT)}, ("read_table",))
        text, stated = self._instruction(inp, p, doc)
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Find the calls of {n_sessions} agent sessions ({n_calls} tool calls) that the skill's guard "
                      "blocks, each with the pattern that blocks it.",
            env_files=files, docker_lines=["COPY app/ /app/", "RUN mkdir -p /app/out"],
            slots=Slots(topic="", situation="", ask="", inputs="", guidance="", semantics=[], deliverable="",
                        outputs=[OUT, "/app/out"], text=text),
            stated=stated, check=check, expected=expected, rubric=self._rubric(p),
            solve=solver_script(SOLVER.replace("__SPEC__", repr(json.dumps(spec)))),
            wrong=solver_script(NAIVE.replace("__SPEC__", repr(json.dumps(spec)))),
            cheats={"every_call.sh": cheats.rows(OUT, HEADER, [f"session-01,{cid},{patterns[0]['text']}"
                                                                for cid, _ in sessions[0]]),
                    "header_only.sh": cheats.header_only(OUT, HEADER)},
            complexity=Complexity(level=inp.sample.complexity, files_to_read=n_sessions + 1,
                                  rules_in_play=len(patterns), dependent_steps=2, items=n_calls),
            challenges=[Challenge(pattern="", dimension="", effect="boundary",
                                  instantiation="near misses of every pattern: the subcommand as an argument, a flag "
                                                "in the other case, another argument, the pattern quoted",
                                  tested_by=["every_condition"])],
            facts=[f"{SESSIONS}: {n_sessions} transcripts, one JSON event per line",
                   f"{doc}: the blocked list, quoted"],
            boundary=InformationBoundary(stated=["the blocked patterns, quoted", "how a command is matched",
                                                 "the output layout"],
                                         discover=["which calls chain a blocked command after harmless ones",
                                                   "which look-alikes the patterns do not cover"]),
            docs=[doc], deliverables=[OUT],
        )

    def _excerpt(self, text: SkillText, p: Predicate) -> str:
        heading = text.heading_above(p.source.file, p.source.line)
        lines = [text.lines(p.source.file)[x["line"] - 1] for x in p.params["patterns"]]
        return "\n".join([f"# {text.name}: blocked commands", "", "Quoted from our playbook.", "",
                          f"## {heading}" if heading else "", "", *dict.fromkeys(lines)]).rstrip() + "\n"

    def _instruction(self, inp: ShapeInput, p: Predicate, doc: str) -> tuple[str, list[str]]:
        patterns = p.params["patterns"]
        listed = ", ".join(f"`{x['text']}`" for x in patterns)
        quotes = [f"“{plain}”" for plain in dict.fromkeys(
            inp.text.lines(p.source.file)[x["line"] - 1].strip().lstrip("-* ").replace("`", "")
            for x in patterns)]
        rules = f"Our guard blocks what the playbook lists: {' '.join(quotes)} So the patterns are {listed}."
        conv = ["Split each command line into its simple commands at `&&`, `||`, `;` and `|`, with shell quoting "
                "(a quoted string is one word). A simple command is blocked by a pattern when its first word is the "
                "pattern's program, its first word after the program that does not start with `-` is the "
                "pattern's subcommand, and each further word of the pattern is one of its words exactly (letter "
                "case counts); other words may come with it.",
                "A call is blocked when any of its simple commands is; report it once, with the first pattern in "
                "the order above that blocks its first blocked simple command."]
        request = Request(
            situation=f"We are adding the command guard of our {inp.text.name} playbook and want to know what it "
                      f"would have stopped. The agent's recent session transcripts are in {SESSIONS} (one JSON event "
                      f"per line; a Bash tool call is a `tool_use` event with the command in `input.command`), and "
                      f"the playbook's list is quoted in {doc}.",
            rules=rules, conventions=" ".join(conv),
            deliverable=f"Write {OUT} with the header `{HEADER}` and one row per blocked call (any order): "
                        "`session` the transcript's file name without `.jsonl`, `call_id` the tool call's `id`, "
                        "`pattern` the blocking pattern as written above.",
            ask="Find every tool call the guard would block.", extra=["Leave the transcripts as they are."],
            hint="Python's shlex module splits a command line the way a shell does.")
        s = inp.sample
        return render(request, s.persona, s.tone, s.expertise, inp.seed), [rules, *conv, request.deliverable]

    def _rubric(self, p: Predicate) -> RubricSpec:
        patterns = p.params["patterns"]
        at = f"{p.source.file}:{p.source.line}"
        must = [Bullet("Report every tool call whose command, or one of its chained commands, matches a blocked "
                       "pattern, and no other.", "metric:blocked_calls"),
                Bullet("Read each pattern word by word on each simple command (quoting, letter case, options before "
                       "the subcommand), none of its conditions dropped.", "metric:every_condition")]
        flags = [x for x in patterns if any(re.fullmatch(r"-[A-Za-z]", w) for w in x["words"][2:])]
        flag = next((x for x in flags if any(re.fullmatch(r"-[A-Z]", w) for w in x["words"][2:])), None) or (
            flags[0] if flags else None)
        avoid = [Bullet(f"Reporting a command because it mentions `{patterns[0]['text']}` in a message or as an "
                        "argument of another subcommand.", at)]
        if flag:
            avoid.append(Bullet(f"Treating `{flag['text']}` as if it blocked the same flag in the other case.",
                                f"{flag['file']}:{flag['line']}"))
        practice = [Bullet("Check every command chained on a line, not only the first one.", at)]
        return RubricSpec(must, avoid, practice)
