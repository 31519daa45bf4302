"""Reference tables: Markdown tables and 'Key: value' definition lists (e.g. a palette `Dark: #141413 - text`)."""

from __future__ import annotations

import re
from itertools import groupby

from skill2env_dagster.knowledge.source import Block, plain
from skill2env_dagster.models.knowledge import LookupTable

MAX_ROWS = 40
_DEF = re.compile(r"^\s*(?:\*\*)?([^:*\n]{2,40}?)(?:\*\*)?\s*(?:\*\*)?:(?:\*\*)?\s+(.{1,160})$")


def tables_in(blocks: list[Block]) -> list[LookupTable]:
    out = [t for b in blocks if b.kind == "table" and (t := _table(b))]
    items = [b for b in blocks if b.kind == "item" and not b.ordered]
    for _lid, group in groupby(items, key=lambda b: (b.doc.path, b.list_id)):
        g = list(group)
        pairs = [(m.group(1).strip(), m.group(2).strip(), b) for b in g
                 if (m := _DEF.match(plain(b.text.split("\n")[0])))]
        if len(pairs) >= 3 and len(pairs) >= 0.8 * len(g) and len({k.lower() for k, _, _ in pairs}) == len(pairs):
            first = pairs[0][2]
            out.append(LookupTable(title=first.section or "Definitions", columns=["term", "definition"],
                                   rows=[[k, v] for k, v, _ in pairs][:MAX_ROWS],
                                   row_lines=[b.line for _, _, b in pairs][:MAX_ROWS], origin="definition_list",
                                   ref=first.ref()))
    return out


def _table(b: Block) -> LookupTable | None:
    if len(b.rows) < 3:
        return None
    header, body = b.rows[0], b.rows[1:]
    width = len(header)
    rows = [r for r in body if len(r) == width and all(c.strip() for c in r)]
    lines = [ln for r, ln in zip(body, b.row_lines[1:], strict=False) if len(r) == width and all(c.strip() for c in r)]
    if width < 2 or len(rows) < 2 or not all(h.strip() for h in header):
        return None
    return LookupTable(title=b.section or "Table", columns=[h[:60] for h in header],
                       rows=[[c[:160] for c in r] for r in rows[:MAX_ROWS]], row_lines=lines[:MAX_ROWS],
                       origin="table", ref=b.ref())
