"""service_runtime / protocol_conformance: load a batch into a local stand-in of the skill's documented HTTP API.

The stub keeps the contract the skill documents (its create endpoint, the fields and integer fields of its JSON
example, its port) and pages its listings. Knowing the skill decides the outcome: records already in the service
(some only on a later page) must not be created again, rows the service rejects must be reported and, when the
skill says so, never retried, and a transient 5xx must be retried as the skill prescribes or the record is lost.

The verifier grades what the service itself recorded: the stub runs as a stand-in service in a container of its
own beside the agent's (environment/docker-compose.yaml), the runner copies its request journal out of that
container after the agent phase, and the verifier replays it through the installed stub's own code (below /usr,
which the tamper gate protects). A state file or journal written by hand, a stub of the agent's own, or a list of
everything earns nothing.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from skill2env_dagster.models.blueprint import Challenge, Complexity, InformationBoundary, Predicate
from skill2env_dagster.tasks.compose.instruction import Slots
from skill2env_dagster.tasks.compose.rubric import Bullet, RubricSpec, rule_bullet
from skill2env_dagster.tasks.shapes.base import Design, ShapeError, ShapeInput, solver_script
from skill2env_dagster.tasks.standins.http_stub import (
    COLLECTED_JOURNAL,
    CONTRACT,
    JOURNAL,
    SERVER,
    StubContract,
    stub_service,
)
from skill2env_dagster.tasks.verify import cheats
from skill2env_dagster.tasks.verify.checkpy import CheckScript, Metric

BATCH = "/app/inbox/batch.csv"
DOCS = "/app/docs/API.md"
OUT = "/app/out/rejected.csv"
HEADER = "row,status"
SEED_RECORDS = 7  # more than one page, so existing records hide on page 2
PAGE_SIZE = 5
BACKOFF = (1, 2, 4)  # seconds between 5xx retries when the skill gives no schedule of its own

LOADER = f'''
import importlib.util
import urllib.request


def journal():
    """The service's journal as the runner copied it out of the service's container; a runner that copies
    nothing (Harbor) has the service itself answer (the agent's processes are gone by now, the port is the
    service's). None when neither is there."""
    path = pathlib.Path({COLLECTED_JOURNAL!r})
    if path.is_file():
        return [ln for ln in path.read_text().splitlines() if ln.strip()]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{{PORT}}/__journal", timeout=5) as resp:
            return list(json.loads(resp.read()))
    except (OSError, ValueError, TypeError):
        return None


def load():
    """The records the journal's calls created, replayed by the installed stub's own code (a journal whose
    answers differ from what that code answers is rejected), the journal entries and the reported rows."""
    spec = importlib.util.spec_from_file_location("stub_server", {SERVER!r})
    stub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stub)
    contract = json.loads(pathlib.Path({CONTRACT!r}).read_text())
    lines = journal()
    state = None if lines is None else stub.replay(contract, lines)
    if state is None:
        return None
    rows = read_table(OUT, ["row", "status"]) or []
    created = [tuple(json.dumps(r.get(f)) for f in FIELDS) for r in state["records"] if r.get("id") not in SEED_IDS]
    return {{"created": created, "journal": [json.loads(ln) for ln in lines], "rejected": [r[:2] for r in rows]}}
'''


# Kill every process running the stub's code, then start a copy of the stub (same code and contract) that loads
# the journal the cheat wrote beside it; whatever answers on the port afterwards is then the agent's own.
REPLACE_STUB = f"""for d in /proc/[0-9]*; do
  case "$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null)" in *{SERVER}*) kill -9 "${{d#/proc/}}" 2>/dev/null;; esac
done
setsid python3 -I {SERVER} {CONTRACT} >/dev/null 2>&1 < /dev/null &
sleep 1"""


def forged_journal(world: ServiceWorld, collection: str) -> list[list[Any]]:
    """The journal an honest import leaves (each new record created, the flaky ones after one 503, each invalid
    row refused once), written without a single call."""
    out: list[list[Any]] = []
    for r in world.new:
        out += [["POST", collection, 503, r]] if r in world.flaky else []
        out.append(["POST", collection, 201, r])
    return out + [["POST", collection, 422, r] for r in world.invalid]


def _contract_fields(p: Predicate) -> tuple[list[str], list[str], dict[str, Any]]:
    example: dict[str, Any] = p.params["example"]
    fields = list(example)
    return fields, [f for f in fields if f in p.params["integers"]], example


def _value(example: Any, i: int, words: list[str], rng: random.Random) -> Any:
    """A plausible value shaped like the skill's example ('LAMP-001' -> 'LAMP-317'; 2 -> 1..9)."""
    if isinstance(example, int):
        return rng.randint(1, 9)
    if m := re.fullmatch(r"([A-Za-z]+)([-_]?)(\d+)", str(example)):
        width = len(m.group(3))
        return f"{m.group(1)}{m.group(2)}{rng.randint(10 ** (width - 1) if width > 1 else 1, 10 ** width - 1)}"
    return f"{rng.choice(words)}-{i}"


class ServiceWorld:
    """Seed records, the batch rows and what each row should become."""

    def __init__(self, inp: ShapeInput, p: Predicate) -> None:
        self.fields, self.ints, example = _contract_fields(p)
        rng = inp.rng("service")
        words = [w for w in inp.vocabulary if re.fullmatch(r"[a-z]{3,12}", w)][:20] or ["alpha", "bravo", "delta"]
        pool: list[dict[str, Any]] = []
        keys: set[str] = set()
        n_new = 4 + inp.level
        while len(pool) < SEED_RECORDS + n_new:
            rec = {f: _value(example[f], len(pool) + 1, words, rng) for f in self.fields}
            if json.dumps(rec, sort_keys=True) not in keys:
                keys.add(json.dumps(rec, sort_keys=True))
                pool.append(rec)
        self.seed = pool[:SEED_RECORDS]
        self.new = pool[SEED_RECORDS:]
        self.retry = bool(p.params.get("retry_5xx"))
        self.flaky = self.new[:2] if self.retry else []
        text = [f for f in self.fields if f not in self.ints][-1]
        bad_values: list[Any] = [0, "two"]  # a non-positive integer, a word: both refused (422)
        self.invalid = [{**self.new[i], self.ints[0]: bad_values[i], text: f"{self.new[i][text]}x"} for i in range(2)]
        # On the batch: every new record, two existing ones (one only on page 2), one repeat, the invalid rows.
        rows: list[dict[str, Any]] = [*self.new, self.seed[1], self.seed[PAGE_SIZE + 1], self.new[-1], *self.invalid]
        rng.shuffle(rows)
        self.rows = rows
        self.rejected = sorted(n for n, r in enumerate(rows, 1) if r in self.invalid)

    def csv(self) -> str:
        return ",".join(self.fields) + "\n" + "".join(",".join(str(r[f]) for f in self.fields) + "\n"
                                                    for r in self.rows)

    def created(self) -> list[list[str]]:
        return sorted([json.dumps(r[f]) for f in self.fields] for r in self.new)

    def contract(self, p: Predicate) -> StubContract:
        return StubContract(collection=p.params["collection"], fields=self.fields, integers=self.ints,
                            seed=[{"id": f"R-{i + 1}", **r} for i, r in enumerate(self.seed)],
                            flaky=self.flaky, page_size=PAGE_SIZE, port=p.params["port"])


def _metrics(world: ServiceWorld, p: Predicate) -> list[Metric]:
    out = [
        Metric("records_created", "Multiset Jaccard of the records the service created (exact field values) "
               "against the batch's new records: a duplicate, an existing record again or a rejected row costs.",
               'return jaccard([tuple(x) for x in EXPECTED["created"]], out["created"])', ("jaccard",), [p.id]),
        Metric("rejected_rows", "Jaccard of the reported (row, status) pairs against the rows the service rejects.",
               'return jaccard(EXPECTED["rejected"], out["rejected"])', ("jaccard",), [p.id]),
    ]
    if p.params.get("no_retry_4xx"):
        out.append(Metric(
            "rejections_once", "Share of the rejected bodies sent exactly once (a 4xx is never retried), scaled by "
            "the precision of the 4xx answers and by records_created.",
            'bodies = [json.dumps(e[3], sort_keys=True) for e in out["journal"] if e[0] == "POST" '
            'and e[3] is not None]\n'
            'bad = [json.dumps(b, sort_keys=True) for b in EXPECTED["invalid"]]\n'
            'once = sum(bodies.count(b) == 1 for b in bad) / len(bad)\n'
            'refused = [json.dumps(e[3], sort_keys=True) for e in out["journal"] if 400 <= e[2] < 500 '
            'and e[3] is not None]\n'
            'return once * precision(refused, bad) * metric_records_created(out) if refused else 0.0',
            ("precision",), [p.id]))
    if world.flaky:
        out.append(Metric(
            "transient_recovered", "Share of the records answered 503 at first that were retried and created "
            "exactly once, scaled by records_created.",
            'got = [json.dumps(e[3], sort_keys=True) for e in out["journal"] if e[0] == "POST" and e[2] == 201]\n'
            'flaky = [json.dumps(b, sort_keys=True) for b in EXPECTED["flaky"]]\n'
            'return sum(got.count(b) == 1 for b in flaky) / len(flaky) * metric_records_created(out)', (), [p.id]))
    return out


def _program(world: ServiceWorld, p: Predicate, careful: bool) -> str:
    """The solver: the careful one pages through existing records, retries only a 5xx (with back-off), never a
    4xx; the naive one (careful=False) reads only the first page and retries every failure at once."""
    return f"""
import csv, json, pathlib, time, urllib.error, urllib.request
BASE = "http://127.0.0.1:{p.params['port']}"
COL = {p.params['collection']!r}
FIELDS = {world.fields!r}
INTS = {world.ints!r}
CAREFUL = {careful!r}


def call(method, path, body=None):
    payload = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, payload, {{"Content-Type": "application/json"}}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, None


def key(rec):
    return tuple(json.dumps(rec.get(f)) for f in FIELDS)


existing, path = set(), COL + "?page=1"
while path:
    status, page = call("GET", path)
    existing |= {{key(r) for r in page["items"]}}
    path = page["next"] if CAREFUL else None
rejected = []
for n, row in enumerate(csv.DictReader(open({BATCH!r})), 1):
    body = {{f: int(row[f]) if f in INTS and row[f].strip().lstrip("-").isdigit() else row[f].strip()
            for f in FIELDS}}
    if key(body) in existing:
        continue
    for wait in (*{BACKOFF!r}, None):
        status, _ = call("POST", COL, body)
        if status < 400 or wait is None or (CAREFUL and status < 500):
            break
        time.sleep(wait if CAREFUL else 0)
    if status == 201:
        existing.add(key(body))
    elif 400 <= status < 500:
        rejected.append(f"{{n}},{{status}}")
out = pathlib.Path({OUT!r})
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("\\n".join([{HEADER!r}, *rejected]) + "\\n")
"""


def _docs(inp: ShapeInput, p: Predicate, world: ServiceWorld, cli: str) -> str:
    c = p.params["collection"]
    quoted = "\n".join(f"> {ln}" for ln in inp.text.block(p.source.file, p.source.line)) or f"> {p.statement}"
    return (f"# Local {p.subject} service\n\nBase URL: http://127.0.0.1:{p.params['port']}\n\n"
            f"- `GET /health` → 200\n"
            f"- `GET {c}?page=N` → 200 `{{\"items\": [...], \"next\": \"{c}?page=N+1\"}}`; `next` is null on "
            f"the last page ({PAGE_SIZE} records per page)\n"
            f"- `GET {c}/<id>` → 200 record, 404 unknown\n"
            f"- `POST {c}` with a JSON object of exactly the fields {', '.join(world.fields)} (integers, at least "
            f"1: {', '.join(world.ints)}) → 201 record with a new id; 422 on missing, unknown or mistyped fields; "
            f"503 when the service is briefly unavailable\n"
            f"- `DELETE {c}/<id>` → 204\n\n"
            f"`{cli}` on PATH wraps these calls (`{cli} start | list [PAGE] | get ID | create k=v ... | delete ID`); "
            f"`{cli} start` waits until the service answers.\n\n"
            f"## From the {inp.skill.name or 'skill'} notes ({p.source.label})\n\n{quoted}\n")


class ServiceSync:
    name = "service_sync"
    archetype = "service_runtime"
    verifier = "protocol_conformance"
    family = "service"
    kinds = frozenset({"service"})
    effects = frozenset({"rule_in_docs", "corrupted"})
    max_preds = 1

    def design(self, inp: ShapeInput) -> Design:
        p = inp.preds[0]
        if not p.params.get("integers") or len(p.params.get("example", {})) < 2:
            raise ShapeError("the documented request body has no integer field to validate")
        world = ServiceWorld(inp, p)
        cli = f"{re.sub(r'[^a-z0-9]+', '-', p.subject.lower()).strip('-') or 'svc'}-cli"
        files, docker = stub_service(world.contract(p), cli)
        files[BATCH.lstrip("/")] = world.csv()
        files[DOCS.lstrip("/")] = _docs(inp, p, world, cli)
        expected: dict[str, Any] = {"created": world.created(), "rejected": [[str(n), "422"] for n in world.rejected],
                                    "invalid": world.invalid, "flaky": world.flaky}
        check = CheckScript(loader=LOADER, metrics=_metrics(world, p), loader_needs=("read_table",),
                            constants={"SEP": '","', "OUT": repr(OUT), "PORT": repr(p.params["port"]),
                                       "FIELDS": repr(world.fields),
                                       "SEED_IDS": repr([f"R-{i + 1}" for i in range(len(world.seed))])})
        return Design(
            shape=self.name, archetype=self.archetype, verifier=self.verifier,
            objective=f"Load a batch of {len(world.rows)} rows into the local {p.subject} service through its "
                      "API, following its contract and the skill's retry rules, and report the rejected rows.",
            env_files=dict(files), docker_lines=["COPY app/ /app/", *docker, "RUN mkdir -p /app/out"],
            slots=self._slots(inp, p, world, cli), check=check, expected=expected, rubric=self._rubric(inp, p),
            solve=solver_script(f"import subprocess\nsubprocess.run([{cli!r}, 'start'], check=True)\n"
                                + _program(world, p, careful=True)),
            wrong=solver_script(f"import subprocess\nsubprocess.run([{cli!r}, 'start'], check=True)\n"
                                + _program(world, p, careful=False)),
            cheats=self._cheats(world, p, cli),
            complexity=Complexity(level=inp.sample.complexity, files_to_read=2, rules_in_play=1,
                                  dependent_steps=2, items=len(world.rows)),
            challenges=[c for c in self._challenges(world) if c.effect in inp.effects],
            facts=[f"{BATCH}: {len(world.rows)} rows", f"{DOCS}: the service contract and the skill's rule, quoted",
                   f"the stub at 127.0.0.1:{p.params['port']}{p.params['collection']} starts with "
                   f"{len(world.seed)} records"],
            boundary=InformationBoundary(
                stated=["where the batch and the contract are", "that existing records must not be created again",
                        "the rejected-rows format"],
                discover=["that listings are paged", "which rows the service rejects"]
                + (["that a 503 is retried with back-off"] if world.retry else [])
                + (["that a 4xx is never retried"] if p.params.get("no_retry_4xx") else [])),
            docs=[DOCS], deliverables=[OUT],
        )

    @staticmethod
    def _challenges(world: ServiceWorld) -> list[Challenge]:
        return [Challenge(pattern="", dimension="", effect="rule_in_docs",
                          instantiation="paging and the skill's retry rule are only in the API notes",
                          tested_by=["records_created"] + (["transient_recovered"] if world.flaky else [])),
                Challenge(pattern="", dimension="", effect="corrupted",
                          instantiation="rows with an unusable integer field are rejected by the service",
                          tested_by=["rejected_rows"])]

    def _slots(self, inp: ShapeInput, p: Predicate, world: ServiceWorld, cli: str) -> Slots:
        rng = inp.rng("slots")
        base = f"http://127.0.0.1:{p.params['port']}{p.params['collection']}"
        return Slots(
            topic=f"the {p.subject} import",
            situation=rng.choice([f"A batch of {p.subject} has to go into the local service before the next run.",
                                  f"The {p.subject} export from last night still has to be loaded into the service."]),
            inputs=f"The batch is {BATCH}, one row per record, and the service answers at {base}.",
            guidance=f"Its contract and the rules our notes give for calling it are in {DOCS}.",
            ask="load every row that is not in the service yet through its API, following those rules",
            semantics=["A row equal to a record the service already holds, or to an earlier row, must not be "
                       "created again.",
                       f"List each row the service refuses in {OUT} under the header `{HEADER}`, with its row "
                       "number in the batch (the first data line is 1) and the status code it got."],
            deliverable=f"The records in the service afterwards and {OUT} are what counts.",
            constraints=["Work through the API only; the service keeps its own records.",
                         "Leave the batch and the notes as they are."],
            hint=f"Python 3's urllib can call the service; `{cli} start` waits until it answers.",
            example="7,422", outputs=[OUT, "/app/out"],
        )

    def _rubric(self, inp: ShapeInput, p: Predicate) -> RubricSpec:
        must_do = [Bullet("Create each new batch record exactly once through the API, with exact field values",
                          "metric:records_created"),
                   Bullet(f"Report every refused row with its status in {OUT}", "metric:rejected_rows")]
        avoid = [Bullet("Creating a record the service already holds (it may be on a later page)",
                        "metric:records_created"),
                 Bullet("Writing the service's data directly instead of calling its API", "metric:records_created")]
        practice = [rule_bullet(p, "to every call the import makes"),
                    Bullet("Page through the listing until `next` is null before deciding what exists",
                           "metric:records_created")]
        return RubricSpec(must_do, avoid, practice)

    def _cheats(self, world: ServiceWorld, p: Predicate, cli: str) -> dict[str, str]:
        """Shortcuts, including three forgeries of what the service records: its state, its journal (one the
        stub's own replay accepts: it would score 1 if the verifier read the agent's copy), the journal where the
        verifier reads it, and the stub killed and replaced by one of the agent's own. With the header-only report
        beside them, only a forged record could earn reward: each must score 0."""
        every = [f"{n},422" for n in range(1, len(world.rows) + 1)]
        records = [{"id": f"R-{i + 1}", **r} for i, r in enumerate(world.seed + world.new)]
        journal = "".join(json.dumps(e) + "\n" for e in forged_journal(world, p.params["collection"]))
        state = {"records": records, "journal": journal.splitlines()}
        post_all = (f"{cli} start >/dev/null\n" + "".join(
            f"{cli} create " + " ".join(f"{f}={r[f]}" for f in world.fields) + " >/dev/null || true\n"
            for r in world.rows))
        example = " ".join(f"{k}={v}" for k, v in p.params["example"].items())
        header = cheats.header_only(OUT, HEADER)
        return {
            "forge_state.sh": cheats.combine(cheats.text_file("/var/lib/stub/state.json", json.dumps(state)), header),
            "forge_journal.sh": cheats.combine(cheats.text_file(JOURNAL, journal), header),
            "forge_collected_journal.sh": cheats.combine(cheats.text_file(COLLECTED_JOURNAL, journal), header),
            "replace_stub.sh": cheats.combine(cheats.text_file(JOURNAL, journal), cheats.raw(REPLACE_STUB), header),
            "list_everything.sh": cheats.combine(cheats.raw(post_all), cheats.rows(OUT, HEADER, every)),
            "header_only.sh": cheats.header_only(OUT, HEADER),
            "example_only.sh": cheats.combine(cheats.raw(f"{cli} create {example} >/dev/null || true"),
                                              cheats.rows(OUT, HEADER, ["7,422"])),
        }
