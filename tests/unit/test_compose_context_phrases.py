"""compose/context.py: the short phrase that names each kind of method (procedure, table, template) and code tokens."""

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.models.knowledge import SourceRef
from skill2env_dagster.tasks.compose.context import _code, _one, short


def _p(kind: str, params: dict) -> Predicate:
    return Predicate(id="R1", kind=kind, subject="x", statement="x", params=params,
                     source=SourceRef(file="SKILL.md", line=1, quote="x"))


def test_short_cuts_words_and_strips_markup_but_keeps_inner_underscores():
    assert short("read `molar_masses.json` first") == "read molar_masses.json first"
    assert short("one two three four five six seven") == "one two three four five…"


def test_procedure_names_first_and_last_step():
    s = _one(_p("order", {"steps": ["Open the file", "Check totals", "Write the report."]}))
    assert s == "it has 3 parts, from “Open the file” to “Write the report”"
    assert _one(_p("coverage", {"steps": []})) == ""


def test_table_names_key_and_value_columns_and_three_keys():
    rows = [[f"k{i}", str(i)] for i in range(5)]
    s = _one(_p("lookup", {"columns": ["Element symbol", "Molar mass"], "key": 0, "value": 1, "rows": rows}))
    assert s.startswith("it maps Element symbol (such as “k0”")
    assert "“k2”" in s and "“k3”" not in s and s.endswith("to Molar mass")


def test_template_names_first_and_last_heading():
    assert _one(_p("sections", {"headings": ["Summary", "Risks", "Next steps"]})) == \
        "its headings run from “Summary” to “Next steps”"
    assert _one(_p("sections", {})) == ""


def test_code_tokens_as_noun_phrases():
    assert _code("lower()") == "the `lower()` call"
    assert _code("--help") == "the `--help` flag"
    assert _code("UTF-8") == ""
