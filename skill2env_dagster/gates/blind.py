"""The skill-blind baseline battery: what generic tools that never read the skill earn on a task.

A task is about its skill only when the skill's rules decide its answers. Tools that know nothing of the skill -
counting lines or words, grepping for alarm words, taking the first column of every table, a generic table parser
that copies cells by column name and joins rows across tables, listing every item, echoing an input - must
therefore earn less than 0.5 on *every* metric; one metric at 0.5 or more rejects the task as
`skill_blind_baseline_passed`.

Written once, for every task whoever made it (the offline shapes, the model-backed creator, a third-party folder):
each baseline reads only the task's input files (the image's working directory) and writes its answer in the
Oracle's output format - the same files, record layout and field names. The Oracle is read for its format and its
label vocabulary only (a user reads both off the instruction), never for which items it reported. What a baseline
cannot write (a program, a binary) it leaves empty; a file the Oracle modified in place goes back to its input
version. The baselines are mutants of the Oracle's state (`Family.BLIND`) and run in the mutation stage's batch.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
import tarfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

import yaml

from skill2env_dagster.gates.mutants import Doc, Family, Mutant, _fields, _with_field, parse, render
from skill2env_dagster.gates.outputs import OutputFile, OutputUnit, Shape, classify
from skill2env_dagster.gates.sqlite_files import Edit, SqlTable, is_sqlite, read_tables, rewritten

THRESHOLD = 0.5  # a baseline scoring this or more on any metric rejects the task
MAX_INPUT_FILES = 400
MAX_INPUT_BYTES = 8 << 20
MAX_RECORDS = 3000
MIN_MATCH = 0.6  # share of the Oracle's values an input must hold for a field to be an item key
GREP_WORDS = 6  # words of the inputs' own vocabulary tried as `grep -l WORD` and `grep -L WORD`
ALARM = re.compile(r"\b(todo|fixme|xxx|hack|errors?|fail(?:s|ed|ure)?|invalid|warn(?:ing)?s?|deprecated|missing|"
                   r"overdue|late|breach(?:ed)?|violat\w*|expired?|unsafe|insecure|secret|password|debug|blocked|"
                   r"denied|critical|urgent|wrong|broken|bad|not allowed|forbidden|never)\b", re.I)
FLAG = {"yes", "y", "true", "x", "1", "fail", "failed", "error", "late", "overdue", "breach", "breached", "open",
        "missing", "invalid", "no", "false", "n"}
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".cache"}


@dataclass(frozen=True)
class Source:
    """One input file of the task: its path in the container and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class Table:
    """A table found in the inputs (CSV/TSV, a Markdown table, a JSON/YAML list of objects)."""

    source: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Item:
    """Something an answer can name: a file, a folder, a table row or a token, in the answer's own form."""

    key: str
    text: str
    row: tuple[str, ...] = ()
    header: tuple[str, ...] = ()


@dataclass
class Inputs:
    sources: list[Source]
    tables: list[Table] = field(default_factory=list)

    @classmethod
    def of(cls, sources: list[Source]) -> Inputs:
        return cls(sources, [t for s in sources for t in tables_in(s)])

    def dirs(self) -> set[str]:
        root = common_root([s.path for s in self.sources])
        return {str(p) for s in self.sources for p in PurePosixPath(s.path).parents
                if len(str(p)) > len(root) and str(p).startswith(root)}

    def text_below(self, folder: str) -> str:
        return "\n".join(s.text for s in self.sources if s.path.startswith(folder.rstrip("/") + "/"))


# --- reading the inputs --------------------------------------------------------------------------------------------


def sources_from_tar(archive: bytes, skip: Iterable[str]) -> list[Source]:
    """Text files of a `docker cp` archive of the working directory (outputs, binaries and caches left out)."""
    skipped = set(skip)
    out: list[Source] = []
    total = 0
    parent = ""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for info in tar:
            if not parent:
                parent = "/" + info.name.split("/", 1)[0]
            if not info.isfile() or set(PurePosixPath(info.name).parts) & _SKIP_DIRS:
                continue
            path = f"{parent.rsplit('/', 1)[0]}/{info.name}".replace("//", "/")
            if path in skipped or info.size > (1 << 20) or total + info.size > MAX_INPUT_BYTES:
                continue
            data = tar.extractfile(info)
            raw = data.read() if data else b""
            if is_sqlite(raw):
                total += len(raw)
                out += db_sources(path, raw)
                continue
            if b"\0" in raw:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            total += len(raw)
            out.append(Source(path, text))
            if len(out) >= MAX_INPUT_FILES:
                break
    return out


def db_sources(path: str, data: bytes) -> list[Source]:
    """An SQLite input as a generic tool dumps it: each table as CSV (`PATH#TABLE.csv`)."""
    return [Source(f"{path}#{t.name}.csv", t.csv()) for t in read_tables(data, MAX_RECORDS)]


def _cells(values: Iterable[Any]) -> tuple[str, ...]:
    return tuple("" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v)).strip()
                 for v in values)


def _object_table(source: str, objs: list[Any]) -> Table | None:
    dicts = [o for o in objs if isinstance(o, dict)]
    if len(dicts) < 2 or len(dicts) < len(objs) / 2:
        return None
    header = tuple(dict.fromkeys(str(k) for d in dicts for k in d))
    return Table(source, header, tuple(_cells(d.get(k) for k in header) for d in dicts))


def _largest_list(obj: Any) -> list[Any] | None:
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        lists = [v for v in obj.values() if isinstance(v, list)]
        return max(lists, key=len) if lists else None
    return None


def tables_in(s: Source) -> list[Table]:
    """Every table a generic parser finds in one file."""
    suffix = PurePosixPath(s.path).suffix.lower()
    if suffix in (".csv", ".tsv"):
        rows = [tuple(c.strip() for c in r) for r in csv.reader(io.StringIO(s.text),
                                                                 delimiter="\t" if suffix == ".tsv" else ",") if r]
        return [Table(s.path, rows[0], tuple(rows[1:]))] if len(rows) >= 2 else []
    if suffix in (".json", ".yaml", ".yml", ".jsonl"):
        try:
            if suffix == ".jsonl":
                objs: Any = [json.loads(ln) for ln in s.text.splitlines() if ln.strip()]
            else:
                objs = json.loads(s.text) if suffix == ".json" else yaml.safe_load(s.text)
        except (ValueError, yaml.YAMLError):
            return []
        found = _largest_list(objs)
        table = _object_table(s.path, found) if found else None
        return [table] if table else []
    return markdown_tables(s)


def markdown_tables(s: Source) -> list[Table]:
    out: list[Table] = []
    block: list[tuple[str, ...]] = []
    for line in [*s.text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("|") and stripped.count("|") >= 2:
            cells = tuple(c.strip() for c in stripped.strip("|").split("|"))
            if not all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                block.append(cells)
            continue
        if len(block) >= 2:
            out.append(Table(s.path, block[0], tuple(block[1:])))
        block = []
    return out


def common_root(paths: list[str]) -> str:
    if not paths:
        return "/"
    parts = [PurePosixPath(p).parent.parts for p in paths]
    prefix = []
    for group in zip(*parts, strict=False):
        if len(set(group)) != 1:
            break
        prefix.append(group[0])
    return str(PurePosixPath(*prefix)) if prefix else "/"


# --- what an answer names: the item key of an output -------------------------------------------------------------


def _norm(value: str) -> str:
    return value.strip().strip("`'\"").removeprefix("./").rstrip("/")


def _path_form(path: str, tail: int, keep_ext: bool) -> str:
    parts = PurePosixPath(path).parts
    if tail == 0:
        return path
    form = "/".join(parts[-tail:])
    return form if keep_ext else str(PurePosixPath(form).with_suffix("")) if PurePosixPath(form).suffix else form


def _file_universe(values: list[str], inputs: Inputs) -> tuple[float, list[Item]]:
    """Files or folders, when the answers name them (in some form: absolute, relative, a tail, without suffix)."""
    paths = [s.path for s in inputs.sources] + sorted(inputs.dirs())
    best: tuple[int, tuple[int, bool], list[str]] = (0, (0, True), [])
    for tail, keep in itertools.product(range(0, 5), (True, False)):
        forms = {_path_form(p, tail, keep): p for p in paths}
        hits = [forms[v] for v in values if v in forms]
        if len(hits) > best[0]:
            best = (len(hits), (tail, keep), hits)
    count, (tail, keep), hits = best
    if not hits:
        return 0.0, []
    is_dir = {p in inputs.dirs() for p in hits}
    suffixes = {PurePosixPath(p).suffix for p in hits}
    root = common_root(hits) if len(hits) > 1 else str(PurePosixPath(hits[0]).parent)
    like = [p for p in paths if (p in inputs.dirs()) in is_dir and PurePosixPath(p).suffix in suffixes
            and p.startswith(root.rstrip("/") + "/") and p.count("/") in {h.count("/") for h in hits}]
    texts = {s.path: s.text for s in inputs.sources}
    items = {_path_form(p, tail, keep): Item(_path_form(p, tail, keep), texts.get(p) or inputs.text_below(p))
             for p in like}
    return count / len(values), list(items.values())


def _row_universe(values: list[str], inputs: Inputs) -> tuple[float, list[Item]]:
    """Rows of an input table, when the answers name them by one of its columns."""
    best: tuple[int, Table | None, int] = (0, None, 0)
    wanted = Counter(values)
    for t in inputs.tables:
        for col in range(len(t.header)):
            cells = {r[col] for r in t.rows if col < len(r)}
            hits = sum(n for v, n in wanted.items() if v in cells)
            if hits > best[0]:
                best = (hits, t, col)
    hits, table, col = best
    if table is None:
        return 0.0, []
    items = {r[col]: Item(r[col], " ".join(r), r, table.header) for r in table.rows if col < len(r) and r[col]}
    return hits / len(values), list(items.values())


def _shape(value: str) -> str:
    return re.sub(r"[A-Za-z]+", "A", re.sub(r"\d+", "9", value))


def _token_universe(values: list[str], inputs: Inputs) -> tuple[float, list[Item]]:
    """Tokens of the inputs shaped like the answers (T-104 like T-9, INV-2024-7 like A-9-9)."""
    shapes = Counter(_shape(v) for v in values if v)
    if not shapes:
        return 0.0, []
    shape, n = shapes.most_common(1)[0]
    if n < MIN_MATCH * len(values) or shape in ("A", "9"):
        return 0.0, []
    lines: dict[str, list[str]] = {}
    for s in inputs.sources:
        for line in s.text.splitlines():
            for tok in re.findall(r"[\w./:@#+-]+", line):
                tok = tok.strip(".:")
                if _shape(tok) == shape:
                    lines.setdefault(tok, []).append(line)
    hits = sum(1 for v in values if v in lines)
    return hits / len(values), [Item(t, "\n".join(ls)) for t, ls in sorted(lines.items())][:MAX_RECORDS]


def item_universe(values: list[str], inputs: Inputs) -> tuple[float, list[Item]]:
    """The inputs' items an output field names, and the share of the Oracle's values found among them."""
    clean = [_norm(v) for v in values if _norm(v)]
    if not clean:
        return 0.0, []
    found = [f(clean, inputs) for f in (_file_universe, _row_universe, _token_universe)]
    return max(found, key=lambda x: x[0])


# --- an output file as fields ------------------------------------------------------------------------------------


@dataclass
class Layout:
    """How one data output is laid out: its records, which field names items, and the vocabulary of the others."""

    doc: Doc
    key: int | None
    items: list[Item]
    labels: dict[int, list[Any]]  # field -> values seen (few distinct: a label)
    values: dict[int, list[Any]]  # field -> values seen (many distinct)

    @property
    def template(self) -> Any:
        return self.doc.records[0]


def _as_fields(doc: Doc) -> list[list[Any]] | None:
    rows: list[list[Any]] = []
    for r in doc.records:
        f = _fields(r, doc.shape)
        if f is None:
            f = [r] if isinstance(r, str) else None
        if f is None:
            return None
        rows.append(f)
    return rows if rows and len({len(f) for f in rows}) == 1 else None


def layout(doc: Doc, inputs: Inputs) -> Layout | None:
    rows = _as_fields(doc)
    if rows is None:
        return None
    width = len(rows[0])
    best: tuple[float, int | None, list[Item]] = (0.0, None, [])
    for i in range(width):
        column = [str(r[i]) for r in rows if isinstance(r[i], (str, int)) and not isinstance(r[i], bool)]
        if len(column) < len(rows) or len(set(column)) < max(1, len(column) // 2):
            continue
        share, items = item_universe(column, inputs)
        if share > best[0]:
            best = (share, i, items)
    share, key, items = best
    key = key if share >= MIN_MATCH else None
    labels: dict[int, list[Any]] = {}
    values: dict[int, list[Any]] = {}
    for i in range(width):
        if i == key:
            continue
        seen = [r[i] for r in rows]
        distinct = {json.dumps(v, sort_keys=True, default=str) for v in seen}
        (labels if len(distinct) <= max(4, len(seen) // 2) else values)[i] = seen
    return Layout(doc, key, items if key is not None else [], labels, values)


def _mode(seen: list[Any]) -> Any:
    counted = Counter(json.dumps(v, sort_keys=True, default=str) for v in seen)
    return json.loads(counted.most_common(1)[0][0])


def _typed(value: Any, like: Any) -> Any:
    """A value written the way the Oracle wrote that field (an int stays an int in JSON)."""
    if isinstance(like, bool) or not isinstance(like, (int, float)):
        return value if not isinstance(like, str) else str(value)
    try:
        return type(like)(float(value)) if isinstance(like, float) else int(float(value))
    except (TypeError, ValueError):
        return like


# --- the baselines -------------------------------------------------------------------------------------------------


Fill = Callable[[Layout, Item, int], Any]  # a value for field i of the record naming this item


def _fill_mode(lay: Layout, item: Item, i: int) -> Any:
    return _mode(lay.labels.get(i) or lay.values.get(i) or [""])


def _lines(item: Item) -> int:
    return item.text.count("\n") + (1 if item.text and not item.text.endswith("\n") else 0)


def _fill_count(measure: Callable[[Item], int]) -> Fill:
    def fill(lay: Layout, item: Item, i: int) -> Any:
        seen = lay.values.get(i) or lay.labels.get(i) or [""]
        numeric = all(isinstance(v, (int, float)) or re.fullmatch(r"-?\d+(\.\d+)?", str(v)) for v in seen)
        return _typed(measure(item), seen[0]) if numeric else _fill_mode(lay, item, i)
    return fill


def _header_name(lay: Layout, i: int) -> str:
    """The output field's name: a CSV header cell or a JSON key ('' when the format has none)."""
    t = lay.template
    if isinstance(t, dict):
        return str(list(t)[i]).lower()
    if lay.doc.header is not None:
        cells = next(csv.reader([lay.doc.header], delimiter="\t" if lay.doc.shape is Shape.TSV else ","), [])
        return cells[i].strip().lower() if i < len(cells) else ""
    return ""


def _vocab(lay: Layout, i: int) -> dict[str, Any]:
    return {str(v).strip().lower(): v for v in lay.labels.get(i, []) + lay.values.get(i, [])}


def _join(tables: list[Table], item: Item, vocab: dict[str, Any]) -> Any | None:
    """A generic lookup: a row of another table sharing a cell with the item's row, or whose signal phrases occur in
    the item's text, that holds a value of the field's vocabulary."""
    cells = {c.lower() for c in item.row if c} | {item.key.lower()}
    text = item.text.lower()
    for t in tables:
        for row in t.rows:
            if row == item.row:
                continue
            phrases = {p.strip().lower() for c in row for p in re.split(r"[,;/]", c) if len(p.strip()) >= 4}
            if cells & {c.lower() for c in row} or any(p in text for p in phrases):
                for c in row:
                    if c.strip().lower() in vocab:
                        return vocab[c.strip().lower()]
    return None


def _fill_table(tables: list[Table]) -> Fill:
    def fill(lay: Layout, item: Item, i: int) -> Any:
        name, vocab = _header_name(lay, i), _vocab(lay, i)
        like = (lay.labels.get(i) or lay.values.get(i) or [""])[0]
        for h, c in zip(item.header, item.row, strict=False):
            if name and h.strip().lower() == name:
                return _typed(c, like)
        for c in item.row:
            if c.strip().lower() in vocab:
                return vocab[c.strip().lower()]
        joined = _join(tables, item, vocab)
        return joined if joined is not None else _fill_mode(lay, item, i)
    return fill


def _flagged(item: Item) -> bool:
    """What a table parser would call a problem row: a flag-like cell, or an empty cell."""
    return any(c.strip().lower() in FLAG for c in item.row) or any(not c.strip() for c in item.row)


def _record(lay: Layout, item: Item, fill: Fill, labels: dict[int, Any] | None = None) -> Any:
    rec = lay.template
    for i in range(len(_fields(rec, lay.doc.shape) or [rec])):
        if i == lay.key:
            value = item.key
        elif labels and i in labels:
            value = labels[i]
        else:
            value = fill(lay, item, i)
        like = (_fields(rec, lay.doc.shape) or [rec])[i]
        value = _typed(value, like) if i == lay.key else value
        rec = _with_field(rec, lay.doc.shape, i, value) if _fields(rec, lay.doc.shape) is not None else value
    return rec


def _records(lay: Layout, chosen: list[Item], fill: Fill, every_label: bool = False) -> tuple[Any, ...]:
    out: list[Any] = []
    combos: list[dict[int, Any]] = [{}]
    if every_label and lay.labels:
        fields = sorted(lay.labels)[:3]
        vocab = [list({json.dumps(v, sort_keys=True, default=str): v for v in lay.labels[i]}.values())
                 for i in fields]
        combos = [dict(zip(fields, vs, strict=True)) for vs in itertools.product(*vocab)]
    for item in chosen:
        for combo in combos:
            out.append(_record(lay, item, fill, combo))
            if len(out) >= MAX_RECORDS:
                return tuple(out)
    return tuple(out)


@dataclass(frozen=True)
class Baseline:
    name: str
    description: str
    choose: Callable[[list[Item], Inputs], list[Item]]
    fill: Callable[[Inputs], Fill] = lambda _: _fill_mode
    every_label: bool = False


def _top(measure: Callable[[Item], int], share: float) -> Callable[[list[Item], Inputs], list[Item]]:
    def choose(items: list[Item], _: Inputs) -> list[Item]:
        n = max(1, round(len(items) * share))
        return sorted(items, key=lambda it: (-measure(it), it.key))[:n]
    return choose


def _first_column(items: list[Item], inputs: Inputs) -> list[Item]:
    firsts = {r[0].strip() for t in inputs.tables for r in t.rows if r and r[0].strip()}
    return [it for it in items if it.key in firsts or PurePosixPath(it.key).name in firsts]


def _words(item: Item) -> int:
    return len(item.text.split())


BASELINES: tuple[Baseline, ...] = (
    Baseline("list_everything", "every item the inputs offer, under every label", lambda items, _: items,
             every_label=True),
    Baseline("longest_quarter", "the quarter of the items with the most lines", _top(_lines, 0.25),
             lambda _: _fill_count(_lines)),
    Baseline("longest_half", "the half of the items with the most lines", _top(_lines, 0.5),
             lambda _: _fill_count(_lines)),
    Baseline("wordiest_third", "the third of the items with the most words", _top(_words, 1 / 3),
             lambda _: _fill_count(_words)),
    Baseline("grep_alarm_words", "items whose text has an alarm word (error, missing, late, todo, ...)",
             lambda items, _: [it for it in items if ALARM.search(it.text)]),
    Baseline("first_column", "every first-column value of every input table", _first_column),
    Baseline("table_parser", "a generic table parser: flagged or incomplete rows, fields copied by column name "
             "or joined from other tables", lambda items, _: [it for it in items if _flagged(it)] or items,
             lambda inputs: _fill_table(inputs.tables)),
)


def vocabulary(items: list[Item], n: int = GREP_WORDS) -> list[str]:
    """The inputs' own words a blind user would grep for: in 10-60% of the items, the most frequent first."""
    if len(items) < 4:
        return []
    df = Counter(w for it in items for w in set(re.findall(r"[a-z][a-z0-9_-]{2,}", it.text.lower())))
    lo, hi = 0.1 * len(items), 0.6 * len(items)
    return [w for w, c in sorted(df.items(), key=lambda wc: (-wc[1], wc[0])) if lo <= c <= hi][:n]


def _grep(word: str, present: bool) -> Callable[[list[Item], Inputs], list[Item]]:
    def choose(items: list[Item], _: Inputs) -> list[Item]:
        return [it for it in items if (word in it.text.lower()) == present]
    return choose


def grep_baselines(lays: list[Layout]) -> list[Baseline]:
    """`grep -l` and `grep -L` for the words of the inputs' own vocabulary (per task, by one fixed rule)."""
    words = list(dict.fromkeys(w for lay in lays for w in vocabulary(lay.items)))[:GREP_WORDS]
    return [Baseline(f"grep{'' if present else '_not'}[{w}]",
                     f"items {'with' if present else 'without'} the input word {w!r}", _grep(w, present))
            for w in words for present in (True, False)]


# --- whole answers -------------------------------------------------------------------------------------------------


def _prose(baseline: str, inputs: Inputs) -> str:
    """A text report the way a blind tool writes one: grep hits, or every first column."""
    if baseline == "grep_alarm_words":
        lines = [ln for s in inputs.sources for ln in s.text.splitlines() if ALARM.search(ln)]
    else:
        lines = [r[0] for t in inputs.tables for r in t.rows if r]
    return "\n".join(lines[:MAX_RECORDS]) + ("\n" if lines else "")


def counts(inputs: Inputs) -> list[tuple[str, int]]:
    """Numbers a blind tool reports when asked for one: line counts of the largest inputs (with and without a
    header line), their words, how many files and table rows there are."""
    big = sorted(inputs.sources, key=lambda s: (-len(s.text), s.path))[:2]
    out = [(f"lines of {s.path}", s.text.count("\n") + (not s.text.endswith("\n"))) for s in big]
    out += [(f"lines of {s.path} minus a header", s.text.count("\n") - 1) for s in big[:1]]
    out += [("input files", len(inputs.sources)), ("table rows", sum(len(t.rows) for t in inputs.tables))]
    return list({n: (what, n) for what, n in out}.values())


def _with_numbers(value: Any, n: int) -> Any:
    """Every number of an answer replaced by `n` (its structure kept)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return type(value)(n)
    if isinstance(value, str):
        return re.sub(r"-?\d+(?:\.\d+)?", str(n), value)
    if isinstance(value, list):
        return [_with_numbers(v, n) for v in value]
    if isinstance(value, dict):
        return {k: _with_numbers(v, n) for k, v in value.items()}
    return value


def _counted(units: list[OutputUnit], inputs: Inputs, max_bytes: int) -> list[Mutant]:
    """For answers that are numbers with nothing to key them (a count, a map of totals): each count a blind tool
    would give, written in place of every number."""
    out: list[Mutant] = []
    numeric = [f for u in units for f in u.files if f.base is None and len(f.data) <= max_bytes
               and isinstance(_layout_of(f.data, f.path, inputs), Shape)
               and classify(f.path, f.data) in (Shape.LINES, Shape.JSON, Shape.YAML, Shape.CSV, Shape.TSV)
               and re.search(rb"\d", f.data)]
    for what, n in counts(inputs) if numeric else []:
        content = {}
        for f in numeric:
            text = f.data.decode("utf-8", errors="replace")
            try:
                content[f.path] = (json.dumps(_with_numbers(json.loads(text), n)) + "\n").encode()
            except ValueError:
                content[f.path] = re.sub(r"-?\d+(?:\.\d+)?", str(n), text).encode()
        out.append(_blind(f"count[{what}]", f"every number of the answer replaced by the {what} ({n})",
                          _complete(units, content)))
    return out


def _layout_of(data: bytes, path: str, inputs: Inputs) -> Layout | Shape:
    """The output's layout when a data tool can write it, else its shape (text, code, binary, unkeyed data)."""
    shape = classify(path, data)
    if not shape.is_data:
        return shape
    doc = parse(data.decode("utf-8"), shape)
    lay = layout(doc, inputs) if doc is not None and doc.records else None
    return lay if lay is not None and lay.key is not None else Shape.BINARY


def _answer(baseline: Baseline, lay: Layout | Shape, inputs: Inputs) -> bytes:
    if lay is Shape.TEXT:
        return _prose(baseline.name, inputs).encode()
    if not isinstance(lay, Layout):
        return b""
    chosen = baseline.choose(lay.items, inputs)
    records = _records(lay, chosen, baseline.fill(inputs), baseline.every_label)
    return render(replace(lay.doc, records=records))


def _echoes(units: list[OutputUnit], inputs: Inputs) -> list[Mutant]:
    """Echo the sample: an input file of the same kind copied to each output (at most three tries)."""
    out: list[Mutant] = []
    files = [f for u in units for f in u.files]
    for n in range(3):
        writes = []
        for f in files:
            same = [s for s in inputs.sources if PurePosixPath(s.path).suffix == PurePosixPath(f.path).suffix]
            if len(same) > n:
                writes.append((f.path, same[n].text.encode()))
        if writes:
            out.append(_blind(f"echo_input[{n}]", "an input file of the same kind copied to each output",
                              _complete(units, dict(writes))))
    return out


def _complete(units: list[OutputUnit], content: dict[str, bytes]) -> tuple[tuple[str, bytes], ...]:
    """Every output file gets the baseline's content, or its input version (modified files), or nothing - written
    even when it equals the Oracle's (a baseline that reproduces the answer must be run, not skipped)."""
    return tuple((f.path, content.get(f.path, f.base if f.base is not None else b"")) for u in units for f in u.files)


def _blind(name: str, description: str, writes: tuple[tuple[str, bytes], ...]) -> Mutant:
    return Mutant(name, Family.BLIND, description, writes)


def baselines(units: list[OutputUnit], sources: list[Source], max_bytes: int = 4 << 20) -> list[Mutant]:
    """Every baseline's answer as a mutant of the Oracle's state (none when the task has no input to read or no
    output a data tool could write)."""
    inputs = Inputs.of(sources)
    if not units or not inputs.sources:
        return []
    out: list[Mutant] = []
    files = [f for u in units for f in u.files if len(f.data) <= max_bytes]
    dbs = {f.path: db for f in files if (db := DbOutput.of(f, inputs)) is not None}
    lays = {f.path: _layout_of(f.data, f.path, inputs) for f in files if f.base is None and f.path not in dbs}
    keyed = [x for x in lays.values() if isinstance(x, Layout)] + [x for db in dbs.values() for x in db.layouts]
    for b in [*BASELINES, *grep_baselines(keyed)]:
        content = {p: _answer(b, lay, inputs) for p, lay in lays.items()}
        content |= {p: a for p, db in dbs.items() if (a := db.answer(b, inputs)) is not None}
        if any(content.values()):
            out.append(_blind(b.name, b.description, _complete(units, content)))
    return out + _counted(units, inputs, max_bytes) + _echoes(units, inputs)


@dataclass(frozen=True)
class DbOutput:
    """An SQLite deliverable, table by table: the Oracle's rows of each table whose records name input items (the
    input tables include the database's own image version when the Oracle edits it in place). A baseline writes
    its records into the tables (a database it creates: the tables emptied first, the others left empty), or, in
    place, updates the columns the Oracle changed on the rows it chooses; nothing else of the file changes."""

    data: bytes
    base: bytes | None
    tables: tuple[SqlTable, ...]
    layouts: tuple[Layout, ...]
    changed: tuple[tuple[str, ...], ...]  # in place: the columns the Oracle changed, per table

    @classmethod
    def of(cls, f: OutputFile, inputs: Inputs) -> DbOutput | None:
        if not is_sqlite(f.data):
            return None
        base = {t.name: t for t in read_tables(f.base, MAX_RECORDS)} if is_sqlite(f.base) and f.base else None
        found: list[tuple[SqlTable, Layout, tuple[str, ...]]] = []
        for t in read_tables(f.data, MAX_RECORDS):
            records = t.records()
            lay = layout(Doc(Shape.JSON, None, tuple(records), original=records), inputs) if records else None
            if lay is None or lay.key is None:
                continue
            cols = _changed(base.get(t.name), t, t.columns[lay.key]) if base is not None else t.columns
            if cols:
                found.append((t, lay, cols))
        if not found:
            return None
        return cls(f.data, f.base if base is not None else None, tuple(x[0] for x in found),
                   tuple(x[1] for x in found), tuple(x[2] for x in found))

    def answer(self, b: Baseline, inputs: Inputs) -> bytes | None:
        """The database as this baseline leaves it; None when it changes nothing."""
        edits = []
        for t, lay, cols in zip(self.tables, self.layouts, self.changed, strict=True):
            chosen = b.choose(lay.items, inputs)
            if self.base is None:
                edits.append(Edit(t.name, _records(lay, chosen, b.fill(inputs), b.every_label)))
                continue
            key, fill = t.columns[lay.key or 0], _not_from_itself(b.fill(inputs))
            rows = [_record(lay, item, fill) for item in chosen]
            edits.append(Edit(t.name, tuple({c: r[c] for c in (key, *cols)} for r in rows), key))
        if self.base is not None:
            done = rewritten(self.base, edits)
            return None if done is None or done == self.base else done
        others = [n.name for n in read_tables(self.data, 0) if n.name not in {t.name for t in self.tables}]
        return rewritten(self.data, edits, cleared=others)


def _changed(base: SqlTable | None, now: SqlTable, key: str) -> tuple[str, ...]:
    """Columns whose value the Oracle changed on a row the image already had (matched by the key column)."""
    if base is None or base.columns != now.columns:
        return ()
    before = {r[key]: r for r in base.records()}
    return tuple(c for c in now.columns if c != key
                 and any(r[key] in before and before[r[key]][c] != r[c] for r in now.records()))


def _not_from_itself(fill: Fill) -> Fill:
    """In place, a field is not copied from the very cell it fills (the row's own old value)."""
    def inner(lay: Layout, item: Item, i: int) -> Any:
        name = _header_name(lay, i)
        keep = [j for j, h in enumerate(item.header) if h.strip().lower() != name]
        return fill(lay, Item(item.key, item.text, tuple(item.row[j] for j in keep if j < len(item.row)),
                              tuple(item.header[j] for j in keep)), i)
    return inner


def judge(metrics: dict[str, float]) -> tuple[bool, str]:
    """(passed, note): a baseline passes - and the task fails - when any metric reaches the threshold."""
    high = {k: v for k, v in metrics.items() if v >= THRESHOLD - 1e-9}
    if high:
        return True, f"{', '.join(f'{k}={v:.2f}' for k, v in sorted(high.items()))} >= {THRESHOLD}"
    top = max(metrics.values(), default=0.0)
    return False, f"every metric < {THRESHOLD} (highest {top:.2f})"
