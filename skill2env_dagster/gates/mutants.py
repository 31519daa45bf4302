"""Mutants of the Oracle's outputs: pure functions from file contents to guaranteed-wrong contents.

Families, and how a mutant's reward is judged (`judge`):

- trivial — what a no-work output looks like, so each changes *every* output at once and every list inside each
  (a JSON/YAML answer with five sections gets all five cut, not one): `empty` (every output emptied),
  `header_only` (every list cut to its header, or to its first record when that keeps at most a quarter of it;
  in a JSON/YAML document every other value blanked to 0/""/false with its key kept; a file where nothing is
  kept, code and binaries emptied), `junk` (same-shaped junk: structure, keys and line count kept, every value
  replaced), `superset` (every list keeps the Oracle's records plus three times as many junk records, every other
  value and output emptied: the "list everything" shortcut). A mean reward above the threshold is
  `shortcut_passed`.
- destructive — `drop_half`, `perturb_numbers`, `swap_values[i]` (field i rotated across the records; the group
  rejects only when every field's rotation goes unnoticed), `delete_file` (the largest file of a produced
  tree); in a file the Oracle modified, only the records it wrote change. Applied to one output unit at a time,
  and in a JSON/YAML output with several lists to one list at a time (`drop_half:/app/report.json#anomalies`; the
  MAX_LIST_TARGETS largest), so a verifier that grades one section of several is seen; scoring at least the
  Oracle's reward on every metric is `verifier_insensitive`. Skipped when it merely reorders records; information
  only when emptying its unit alone does not lower the reward (an output the verifier does not grade, e.g. a
  helper file).
- info — `reorder` and `duplicate`: a correct verifier may accept them (a set of findings), so they never reject.

Sound, not clever: a mutant that cannot apply (no numbers, one record, no two distinct records) is skipped with
the reason; code gets only mutants that are wrong for any program; prose gets only the trivial ones.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from typing import Any

import yaml

from skill2env_dagster.gates.outputs import OutputFile, OutputUnit, Shape
from skill2env_dagster.gates.reward import TOLERANCE
from skill2env_dagster.reasons import ReasonCode

JUNK_FACTOR = 3  # junk records per Oracle record in `superset`
MIN_JUNK = 5
TRIVIAL_FRACTION = 1 / 4  # `header_only` keeps the first record only when that is at most this share
MAX_SWAP_FIELDS = 6
MAX_LIST_TARGETS = 6  # lists of one JSON/YAML output mutated one at a time (the largest; each costs verifier runs)
_NUM = re.compile(r"(?<![\w.])(-?)(\d+)(\.\d+)?(?![\w])")
_KEYED = re.compile(r"^(\S+?)(\s*[:=,;|\t]\s*|\s+)(.*)$")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Family(StrEnum):
    TRIVIAL = "trivial"
    DESTRUCTIVE = "destructive"
    RELEVANCE = "relevance"  # one unit emptied alone: does the verifier grade this output at all?
    INFO = "info"
    BLIND = "blind"  # a skill-blind baseline's answer (gates/blind.py): judged per metric, its own check


@dataclass(frozen=True)
class Mutant:
    name: str
    family: Family
    description: str
    writes: tuple[tuple[str, bytes], ...] = ()
    deletes: tuple[str, ...] = ()
    unit: str | None = None  # the output unit a destructive or relevance mutant targets
    group: str | None = None  # destructive mutants that reject only together (see _swaps)
    section: str = ""  # the list a destructive mutant targets, in a JSON/YAML output with several ("report.rows")

    @property
    def label(self) -> str:
        where = f"#{self.section}" if self.section else ""
        return f"{self.name}:{self.unit}{where}" if self.unit else self.name


@dataclass(frozen=True)
class Skipped:
    name: str
    why: str
    unit: str | None = None
    section: str = ""

    @property
    def label(self) -> str:
        return Mutant(self.name, Family.INFO, "", unit=self.unit, section=self.section).label


@dataclass
class MutantSet:
    mutants: list[Mutant] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


# --- documents: a data file as records, written back in its own style --------------------------------------------


@dataclass(frozen=True)
class Doc:
    shape: Shape
    header: str | None
    records: tuple[Any, ...]
    newline: str = "\n"
    trailing: bool = True
    path: tuple[Any, ...] = ()  # JSON/YAML: the keys leading to this list ({"report": {"rows": [...]}}: report, rows)
    is_map: bool = False  # JSON/YAML: records are (key, value) pairs of the top-level object
    original: Any = None  # JSON/YAML: the parsed document, to put the records back where they were

    @property
    def where(self) -> str:
        """The list's place in its document, for labels ("report.rows"); "" for the document itself."""
        return ".".join(map(str, self.path))


def _rng(*parts: str) -> random.Random:
    return random.Random(zlib.crc32("\0".join(parts).encode()))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _delimiter(shape: Shape) -> str:
    return "\t" if shape is Shape.TSV else ","


def _split(line: str, shape: Shape) -> list[str]:
    return next(csv.reader([line], delimiter=_delimiter(shape)), [])


def _join(cells: list[str], shape: Shape) -> str:
    buf = io.StringIO()
    csv.writer(buf, delimiter=_delimiter(shape), lineterminator="").writerow(cells)
    return buf.getvalue()


def _has_header(lines: list[str], shape: Shape) -> bool:
    if len(lines) < 2:
        return False
    first = _split(lines[0], shape)
    return bool(first) and all(c.strip() and not _is_number(c) for c in first) and lines[0] not in lines[1:]


def _lists(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], list[Any]]]:
    """Every list of a JSON/YAML document reached through objects only (a list inside a record is part of the
    record), with the keys that lead to it."""
    if isinstance(obj, list):
        yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _lists(value, (*path, key))


def parse_sections(text: str, shape: Shape) -> tuple[Doc, ...]:
    """Every list of records in a data or text file, the largest first: one for line-based files; for JSON/YAML
    each non-empty list reached through objects, or the top-level object itself as a map when there is none.
    Empty when the content does not parse as its shape."""
    if shape in (Shape.CSV, Shape.TSV, Shape.LINES, Shape.JSONL, Shape.TEXT):
        lines = [ln for ln in text.splitlines() if ln.strip()]
        newline = "\r\n" if "\r\n" in text else "\n"
        header = lines[0] if shape in (Shape.CSV, Shape.TSV) and _has_header(lines, shape) else None
        records = lines[1:] if header is not None else lines
        return (Doc(shape, header, tuple(records), newline, text.endswith(("\n", "\r"))),)
    try:
        obj = json.loads(text) if shape is Shape.JSON else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return ()
    trailing = text.endswith("\n")
    found = sorted(((p, v) for p, v in _lists(obj) if v), key=lambda pv: -len(pv[1]))
    if found:
        return tuple(Doc(shape, None, tuple(v), "\n", trailing, p, False, obj) for p, v in found)
    if isinstance(obj, list):
        return (Doc(shape, None, (), "\n", trailing, (), False, obj),)
    if isinstance(obj, dict) and obj:
        return (Doc(shape, None, tuple(obj.items()), "\n", trailing, (), True, obj),)
    return ()


def parse(text: str, shape: Shape) -> Doc | None:
    """The largest list of records of a data or text file, or None when the content does not parse as its
    shape."""
    docs = parse_sections(text, shape)
    return docs[0] if docs else None


def _put(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`obj` with the value at `path` (keys of nested objects) replaced; the objects on the way are copied."""
    if not path:
        return value
    return {**obj, path[0]: _put(obj[path[0]], path[1:], value)}


def _dump(obj: Any, doc: Doc) -> bytes:
    if doc.shape is Shape.JSON:
        text = json.dumps(obj, indent=2, ensure_ascii=False)
    else:
        text = yaml.safe_dump(obj, sort_keys=False, allow_unicode=True)
    return (text.rstrip("\n") + ("\n" if doc.trailing else "")).encode()


def render(doc: Doc) -> bytes:
    if doc.shape in (Shape.JSON, Shape.YAML):
        records: Any = dict(doc.records) if doc.is_map else list(doc.records)
        return _dump(_put(doc.original, doc.path, records), doc)
    lines = ([doc.header] if doc.header is not None else []) + [str(r) for r in doc.records]
    return (doc.newline.join(lines) + (doc.newline if doc.trailing and lines else "")).encode()


def _canon(record: Any) -> str:
    return record if isinstance(record, str) else json.dumps(record, sort_keys=True, default=str)


def same_records(a: Doc, b: Doc) -> bool:
    """Equal as multisets (a reordering is not a different answer)."""
    return a.header == b.header and sorted(map(_canon, a.records)) == sorted(map(_canon, b.records))


# --- junk and perturbation -------------------------------------------------------------------------------------


def _junk_word(word: str, rng: random.Random) -> str:
    if _is_number(word):
        digits = max(1, len(word.lstrip("-").split(".")[0]))
        while (new := str(rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits))) == word:
            pass
        return new
    return "".join(rng.choice(_LETTERS) for _ in word) if word else word


def junk_value(value: Any, rng: random.Random) -> Any:
    """Same structure, every scalar replaced (dict keys are structure and stay)."""
    if isinstance(value, bool):
        return rng.choice([True, False])
    if isinstance(value, int):
        return rng.randrange(10**6) + 7
    if isinstance(value, float):
        return round(rng.uniform(0, 1e4), 3)
    if isinstance(value, str):
        return _junk_word(value, rng) if value.strip() else value
    if isinstance(value, list):
        return [junk_value(v, rng) for v in value]
    if isinstance(value, dict):
        return {k: junk_value(v, rng) for k, v in value.items()}
    if isinstance(value, tuple):  # a (key, value) pair of a map: the key is data here, so it changes too
        return tuple(junk_value(v, rng) for v in value)
    return value


def junk_line(line: str, shape: Shape, rng: random.Random) -> str:
    if shape in (Shape.CSV, Shape.TSV):
        return _join([_junk_word(c, rng) for c in _split(line, shape)], shape)
    if shape is Shape.JSONL:
        try:
            return json.dumps(junk_value(json.loads(line), rng))
        except ValueError:
            pass
    return re.sub(r"\S+", lambda m: _junk_word(m.group(0), rng), line)


def _junk_record(record: Any, doc: Doc, rng: random.Random) -> Any:
    return junk_line(record, doc.shape, rng) if isinstance(record, str) else junk_value(record, rng)


def _bump(m: re.Match[str]) -> str:
    sign, whole, frac = m.group(1), m.group(2), m.group(3) or ""
    if frac:
        value = float(f"{sign}{whole}{frac}") * 1.5 + 1
        return f"{value:.{len(frac) - 1}f}"
    return f"{sign}{int(whole) + 1:0{len(whole)}d}"


def perturb_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 + 1
    if isinstance(value, str):
        return _NUM.sub(_bump, value)
    if isinstance(value, list):
        return [perturb_value(v) for v in value]
    if isinstance(value, dict):
        return {k: perturb_value(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return (value[0], perturb_value(value[1]))  # map: the key stays, its value changes
    return value


# --- record operations on a Doc (None = not applicable) ----------------------------------------------------------


def op_header_only(doc: Doc) -> tuple[Doc, float] | None:
    """(mutated, share of records kept)."""
    if doc.header is not None and doc.records:
        return replace(doc, records=()), 0.0
    if len(doc.records) >= 2:
        return replace(doc, records=doc.records[:1]), 1 / len(doc.records)
    return None


def op_drop_half(doc: Doc) -> Doc | None:
    return replace(doc, records=doc.records[::2]) if len(doc.records) >= 2 else None


def op_superset(doc: Doc, rng: random.Random) -> Doc | None:
    """The list-everything shortcut on a list of records; not on an object (a fixed-schema answer such as
    {"q1": …, "q2": …} may rightly ignore keys it did not ask for)."""
    if not doc.records or doc.is_map:
        return None
    n = max(MIN_JUNK, JUNK_FACTOR * len(doc.records))
    extra = [_junk_record(doc.records[i % len(doc.records)], doc, rng) for i in range(n)]
    return replace(doc, records=doc.records + tuple(extra))


def op_junk(doc: Doc, rng: random.Random) -> Doc | None:
    if not doc.records:
        return None
    return replace(doc, records=tuple(_junk_record(r, doc, rng) for r in doc.records))


def op_perturb(doc: Doc) -> Doc | None:
    if doc.shape in (Shape.JSON, Shape.YAML):
        records = tuple(perturb_value(r) for r in doc.records)
    else:
        records = tuple(_NUM.sub(_bump, r) for r in doc.records)
    return replace(doc, records=records) if records != doc.records else None


def _fields(record: Any, shape: Shape) -> list[Any] | None:
    """A record's fields as a list (CSV cells, dict values, map value, keyed line parts), or None."""
    if isinstance(record, tuple):
        return list(record)
    if isinstance(record, dict):
        return list(record.values())
    if not isinstance(record, str):
        return None
    if shape in (Shape.CSV, Shape.TSV):
        return _split(record, shape)
    if shape is Shape.JSONL:
        try:
            obj = json.loads(record)
        except ValueError:
            return None
        return list(obj.values()) if isinstance(obj, dict) else None
    m = _KEYED.match(record)
    return [m.group(1), m.group(3)] if m else None


def _with_field(record: Any, shape: Shape, index: int, value: Any) -> Any:
    if isinstance(record, tuple):
        return tuple(value if i == index else v for i, v in enumerate(record))
    if isinstance(record, dict):
        return {k: value if i == index else v for i, (k, v) in enumerate(record.items())}
    if shape in (Shape.CSV, Shape.TSV):
        cells = _split(record, shape)
        cells[index] = value
        return _join(cells, shape)
    if shape is Shape.JSONL:
        return json.dumps(_with_field(json.loads(record), Shape.JSON, index, value))
    m = _KEYED.match(record)
    assert m is not None
    parts = [m.group(1), m.group(3)]
    parts[index] = value
    return parts[0] + m.group(2) + parts[1]


def swap_fields(doc: Doc) -> list[int]:
    """Field positions a `swap_values` mutant can exchange (records with the same number of fields)."""
    rows = [_fields(r, doc.shape) for r in doc.records]
    if len(rows) < 2 or any(r is None for r in rows) or len({len(r) for r in rows if r is not None}) != 1:
        return []
    width = len(rows[0] or [])
    return list(range(1 if doc.is_map else 0, width))[:MAX_SWAP_FIELDS] if width >= 2 else []


def op_swap(doc: Doc, index: int) -> Doc | None:
    """Rotate field `index` across the records (each record gets the next one's value), so that every record
    whose neighbour differs is wrong — including the ones a verifier grades when it ignores some (seed data)."""
    fields = [_fields(r, doc.shape) for r in doc.records]
    if len(fields) < 2 or any(f is None for f in fields):
        return None
    values = [f[index] for f in fields if f is not None]
    rotated = values[1:] + values[:1]
    new = replace(doc, records=tuple(_with_field(r, doc.shape, index, v) for r, v in zip(doc.records, rotated,
                                                                                          strict=True)))
    return None if same_records(new, doc) else new


def op_reorder(doc: Doc) -> Doc | None:
    new = replace(doc, records=tuple(reversed(doc.records)))
    return new if new.records != doc.records else None


def op_duplicate(doc: Doc) -> Doc | None:
    if doc.is_map or not doc.records:
        return None
    return replace(doc, records=tuple(r for r in doc.records for _ in (0, 1)))


# --- whole documents: what a no-work JSON/YAML output looks like -------------------------------------------------


def blank_value(value: Any) -> Any:
    """Where a no-work output has nothing to say: the same keys and types, no value computed (0, "", false, [])."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return type(value)(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {k: blank_value(v) for k, v in value.items()}
    return value


def cut_all(value: Any) -> Any:
    """`header_only` on a whole document: every list cut to its first record when that keeps at most a quarter of
    it, else emptied; every other value blanked (the keys stay, so a schema still holds)."""
    if isinstance(value, list):
        return value[:1] if len(value) * TRIVIAL_FRACTION >= 1 else []
    if isinstance(value, dict):
        return {k: cut_all(v) for k, v in value.items()}
    return blank_value(value)


def superset_all(value: Any, rng: random.Random) -> Any:
    """`superset` on a whole document: every list keeps its records and gets JUNK_FACTOR times as many junk ones;
    every other value is blanked, so the work in the other sections cannot carry the mean."""
    if isinstance(value, list):
        n = max(MIN_JUNK, JUNK_FACTOR * len(value)) if value else 0
        return value + [junk_value(value[i % len(value)], rng) for i in range(n)]
    if isinstance(value, dict):
        return {k: superset_all(v, rng) for k, v in value.items()}
    return blank_value(value)


def _records_kept(value: Any) -> bool:
    return any(v for _, v in _lists(value))


# --- files and units -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    out: OutputFile
    shape: Shape
    docs: tuple[Doc, ...] = ()  # its lists of records, the largest first (see parse_sections)
    base: tuple[Doc, ...] = ()  # the image's version of a file the Oracle modified (records it did not write)

    @property
    def path(self) -> str:
        return self.out.path

    @property
    def doc(self) -> Doc | None:
        return self.docs[0] if self.docs else None

    @property
    def structured(self) -> bool:
        """A JSON/YAML document with at least one list: its trivial mutants transform the whole document."""
        return self.doc is not None and self.doc.original is not None and not self.doc.is_map

    def base_of(self, doc: Doc) -> Doc | None:
        """The image's version of the same list, when the Oracle modified this file."""
        if self.out.base is None:
            return None
        return next((b for b in self.base if b.path == doc.path), replace(doc, records=()))


def _prepare(units: list[OutputUnit], max_bytes: int) -> dict[str, list[_File]]:
    prepared: dict[str, list[_File]] = {}
    for u in units:
        files = []
        for f in u.files:
            shape = f.shape(max_bytes)
            docs: tuple[Doc, ...] = ()
            base: tuple[Doc, ...] = ()
            if shape.is_data or shape is Shape.TEXT:
                docs = parse_sections(f.data.decode("utf-8"), shape)
                if f.base is not None and docs:
                    base = parse_sections(f.base.decode("utf-8", errors="replace"), shape)
            files.append(_File(f, shape, docs, base))
        prepared[u.root] = files
    return prepared


def _data(files: list[_File]) -> list[_File]:
    return [f for f in files if f.shape.is_data and f.doc is not None]


def _trivial_header(f: _File) -> bytes:
    """One file in the `header_only` mutant: the header, or the first record when that is at most a quarter of
    the records; in a JSON/YAML document, every list so (cut_all); a file where nothing is kept (up to three
    records, code, binaries) is emptied."""
    if f.structured and f.doc is not None:
        cut = cut_all(f.doc.original)
        return _dump(cut, f.doc) if _records_kept(cut) else b""
    head = op_header_only(f.doc) if f.doc is not None else None
    return render(head[0]) if head and head[1] <= TRIVIAL_FRACTION + 1e-9 else b""


def _junk_file(f: _File) -> bytes:
    rng = _rng(f.path, "junk")
    if f.structured and f.doc is not None:
        return _dump(junk_value(f.doc.original, rng), f.doc)
    if f.doc is not None and f.doc.records:
        junked = op_junk(f.doc, rng)
        return render(junked) if junked else f.out.data
    if f.shape is Shape.CODE:
        text = f.out.data.decode("utf-8", errors="replace")
        lines = text.splitlines()
        head = [lines[0]] if lines and lines[0].startswith("#!") else []
        body = [junk_line(ln, Shape.TEXT, rng) for ln in lines[len(head):]]
        return ("\n".join(head + body) + "\n").encode()
    return bytes(rng.randrange(256) for _ in range(min(len(f.out.data), 1 << 16)))


def _superset_file(f: _File) -> bytes | None:
    """One data file in the `superset` mutant, or None when it has no list of records."""
    rng = _rng(f.path, "sup")
    if f.structured and f.doc is not None:
        return _dump(superset_all(f.doc.original, rng), f.doc)
    sup = op_superset(f.doc, rng) if f.doc is not None else None
    return render(sup) if sup else None


def _writes(files: list[_File], content: dict[str, bytes]) -> tuple[tuple[str, bytes], ...]:
    return tuple((f.path, content[f.path]) for f in files if f.path in content and content[f.path] != f.out.data)


def _trivial(prepared: dict[str, list[_File]], out: MutantSet) -> None:
    """Each trivial mutant changes every output at once, and every list inside each, as a no-work output would:
    one list cut while the others stay right is no output anyone would hand in."""
    every = [f for files in prepared.values() for f in files]
    writes = _writes(every, {f.path: b"" for f in every})
    _add(out, Mutant("empty", Family.TRIVIAL, "every output file emptied", writes), "every output is already empty")
    cut = _writes(every, {f.path: _trivial_header(f) for f in every})
    _add(out, Mutant("header_only", Family.TRIVIAL, "every list cut to its header or first record, every other "
                     "value blanked, the rest emptied", cut if cut != writes else ()),
         "no data file with a header or four records")
    _add(out, Mutant("junk", Family.TRIVIAL, "every output replaced by same-shaped junk",
                     _writes(every, {f.path: _junk_file(f) for f in every})), "no content to replace")
    # List everything in every list, do nothing else: every other output (and value) is emptied, so the Oracle's
    # work elsewhere cannot carry the mean.
    sup = {f.path: s for f in _data(every) if (s := _superset_file(f)) is not None}
    if sup:
        sup = {f.path: sup.get(f.path, b"") for f in every}
    _add(out, Mutant("superset", Family.TRIVIAL, f"every list: the Oracle's records plus {JUNK_FACTOR}x as many "
                     "junk records; every other value and output emptied", _writes(every, sup)),
         "no data output with a list of records")


def _add(out: MutantSet, m: Mutant, why_not: str) -> None:
    if m.writes or m.deletes:
        out.mutants.append(m)
    else:
        out.skipped.append(Skipped(m.name, why_not, m.unit, m.section))


def _new_only(doc: Doc, base: Doc | None, op: Callable[[Doc], Doc | None]) -> Doc | None:
    """Apply `op` to the records the Oracle wrote; in a file it modified (`base`: the image's version of the
    list), the records the image already had (seed data the verifier may rightly ignore) stay as they were."""
    if base is None:
        new = op(doc)
        return new if new is not None and not same_records(new, doc) else None
    seen = Counter(_canon(r) for r in base.records)
    mine: list[int] = []
    for i, r in enumerate(doc.records):
        if seen[_canon(r)] > 0:
            seen[_canon(r)] -= 1
        else:
            mine.append(i)
    sub = op(replace(doc, records=tuple(doc.records[i] for i in mine)))
    if sub is None:
        return None
    records = list(doc.records)
    if len(sub.records) == len(mine):  # changed in place (perturb, swap)
        for i, r in zip(mine, sub.records, strict=True):
            records[i] = r
    else:  # a subset kept in order (drop): remove the Oracle records that are gone
        survivors = iter(sub.records)
        want = next(survivors, None)
        gone = set()
        for i in mine:
            if want is not None and _canon(records[i]) == _canon(want):
                want = next(survivors, None)
            else:
                gone.add(i)
        records = [r for i, r in enumerate(records) if i not in gone]
    new = replace(doc, records=tuple(records))
    return new if not same_records(new, doc) else None


_DESTRUCTIVE_OPS: dict[str, tuple[Callable[[Doc], Doc | None], str, str]] = {
    "drop_half": (op_drop_half, "every second record dropped", "fewer than two records"),
    "perturb_numbers": (op_perturb, "every number changed", "no numbers"),
}

_Target = list[tuple[_File, Doc]]  # the lists one destructive mutant changes together, one per file at most


def _targets(data: list[_File]) -> tuple[dict[str, _Target], int]:
    """What each destructive mutant of a unit changes, by section label: a file with one list joins the unit's
    other one-list files (as a unit always was: "" is their label); a JSON/YAML file with several lists makes
    each of its MAX_LIST_TARGETS largest lists a target of its own (labelled by its keys), joined by the same list
    of the unit's other files, so that a verifier that grades one section of several is seen. Also returns how
    many smaller lists were left to the trivial mutants."""
    targets: dict[str, _Target] = {}
    left = 0
    for f in data:
        for doc in f.docs[:MAX_LIST_TARGETS]:
            where = doc.where if len(f.docs) > 1 else ""
            targets.setdefault(where, []).append((f, doc))
        left += len(f.docs[MAX_LIST_TARGETS:])
    return targets, left


def _destructive(unit: OutputUnit, files: list[_File], out: MutantSet) -> None:
    data = _data(files)
    targets, left = _targets(data)
    if left:
        out.skipped.append(Skipped("destructive", f"{left} smaller lists not mutated one at a time (the "
                                   f"{MAX_LIST_TARGETS} largest of each output are)", unit.root))
    for where, target in (targets or {"": []}).items():
        for name, (op, what, why_not) in _DESTRUCTIVE_OPS.items():
            content = {f.path: render(new) for f, doc in target if (new := _new_only(doc, f.base_of(doc), op))}
            _add(out, Mutant(name, Family.DESTRUCTIVE, what + " (of the records the Oracle wrote)",
                             _writes(files, content), unit=unit.root, section=where),
                 why_not if data else "no data file in this output")
        _swaps(unit, files, target, where, out)
    if unit.is_tree:
        biggest = max(files, key=lambda f: (len(f.out.data), f.path))
        out.mutants.append(Mutant("delete_file", Family.DESTRUCTIVE, f"{biggest.path} deleted",
                                  deletes=(biggest.path,), unit=unit.root))


def _swap_at(doc: Doc, index: int) -> Doc | None:
    return op_swap(doc, index) if index in swap_fields(doc) else None


def _swaps(unit: OutputUnit, files: list[_File], target: _Target, where: str, out: MutantSet) -> None:
    """One `swap_values` mutant per field position; the group rejects only if *every* swap goes unnoticed (a
    verifier may rightly ignore one field, e.g. a synthetic id, but not the pairing of all of them)."""
    widths = {i for _, doc in target for i in swap_fields(doc)}
    seen: list[tuple[tuple[str, tuple[str, ...]], ...]] = []
    for index in sorted(widths):
        docs = {f.path: new for f, doc in target if (new := _new_only(doc, f.base_of(doc), partial(_swap_at,
                                                                                                  index=index)))}
        writes = _writes(files, {p: render(d) for p, d in docs.items()})
        key = tuple((p, tuple(sorted(map(_canon, d.records)))) for p, d in sorted(docs.items()))
        if writes and key not in seen:  # with two fields, swapping either gives the same records
            seen.append(key)
            out.mutants.append(Mutant(f"swap_values[{index}]", Family.DESTRUCTIVE,
                                      f"field {index} rotated across the records", writes, unit=unit.root,
                                      group=f"swap_values:{unit.root}#{where}", section=where))
    if not seen:
        _add(out, Mutant("swap_values", Family.DESTRUCTIVE, "", unit=unit.root, section=where),
             "no two records with different values" if target else "no data file in this output")


def _info(prepared: dict[str, list[_File]], out: MutantSet) -> None:
    every = [f for files in prepared.values() for f in files]
    for name, op, what in [("reorder", op_reorder, "records in reverse order"),
                           ("duplicate", op_duplicate, "every record twice")]:
        content = {f.path: render(new) for f in _data(every) if f.doc and (new := op(f.doc)) is not None}
        _add(out, Mutant(name, Family.INFO, what, _writes(every, content)), "no data file with records")


def derive(units: list[OutputUnit], max_bytes: int) -> MutantSet:
    """Every mutant of the Oracle's outputs, plus the ones that could not apply and why."""
    out = MutantSet()
    if not units:
        return out
    prepared = _prepare(units, max_bytes)
    _trivial(prepared, out)
    for unit in units:
        files = prepared[unit.root]
        if len(units) > 1:
            empty = {f.path: b"" for f in files}
            _add(out, Mutant("unit_empty", Family.RELEVANCE, "only this output emptied", _writes(files, empty),
                             unit=unit.root), "already empty")
        _destructive(unit, files, out)
    _info(prepared, out)
    return out


# --- judging ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    failed: bool
    reason: ReasonCode | None
    note: str


def mean(metrics: dict[str, float]) -> float:
    return sum(metrics.values()) / len(metrics) if metrics else 0.0


def as_good_as(metrics: dict[str, float], oracle: dict[str, float]) -> bool:
    """Every metric at least the Oracle's (same metric names)."""
    return bool(metrics) and set(metrics) == set(oracle) and all(
        metrics[k] >= oracle[k] - TOLERANCE for k in oracle)


def judge(m: Mutant, metrics: dict[str, float], oracle: dict[str, float], threshold: float,
          ungraded: bool = False) -> Judgement:
    """`metrics` is empty when the verifier gave no usable reward (that counts as 0)."""
    if m.family is Family.TRIVIAL:
        score = mean(metrics)
        if score > threshold + TOLERANCE:
            return Judgement(True, ReasonCode.SHORTCUT_PASSED, f"mean {score:.3f} > threshold {threshold}")
        return Judgement(False, None, f"mean {score:.3f} <= threshold {threshold}")
    if m.family is Family.DESTRUCTIVE:
        if ungraded:
            return Judgement(False, None, "information only: emptying this output alone does not lower the reward")
        if as_good_as(metrics, oracle):
            return Judgement(True, ReasonCode.VERIFIER_INSENSITIVE, "scores as high as the Oracle on every metric")
        return Judgement(False, None, "the verifier sees the difference")
    return Judgement(False, None, "information only")
