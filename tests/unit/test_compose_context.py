"""The instruction quotes the skill's own names (stripping markdown must not rewrite them) and never reads as word
salad: what a rule concerns is a complete noun phrase, a short quoted rule, or left out."""

import pytest

from skill2env_dagster.models.blueprint import Predicate, PredicateKind
from skill2env_dagster.models.knowledge import SourceRef
from skill2env_dagster.tasks.compose.context import method_context, short
from skill2env_dagster.tasks.compose.grammar import noun_phrase_problem, salad
from skill2env_dagster.tasks.compose.instruction import problems


@pytest.mark.parametrize(("text", "want"), [
    ("`assets/molar_masses.json`", "assets/molar_masses.json"),  # a file name the task really ships
    ("greatest_iso column", "greatest_iso column"),
    ("_emphasis_ and **bold** [link]", "emphasis and bold link"),
    ("__strong__ words", "strong words"),
])
def test_short_strips_markup_but_keeps_names(text: str, want: str) -> None:
    assert short(text, 5) == want


# Sentences the old composer produced from extracted fragments (a reviewer's examples and the sample corpus's).
SALAD = [
    "The rules in play concern greatest iso- and the use of `lower()`.",
    "The rules in play concern do not read, exists disk and quality exploration md.",
    "The rules in play concern saw pipeline increase and spend.",
    "The rules in play concern skill md and the use of `name`.",
    "The rules in play concern convention and the use of `REAL`.",
]


@pytest.mark.parametrize("text", SALAD)
def test_salad_is_caught_in_the_composed_instruction(text: str) -> None:
    assert salad(text)
    para = "Check the register in /app/data and list each breach. The notes are in /app/docs."
    found = problems(f"{para}\n\n{text}\n", env_paths={"/app/data", "/app/docs"}, outputs=[], skill_text="")
    assert any("noun phrase" in p or "stub" in p or "hyphen" in p for p in found), found


@pytest.mark.parametrize("text", [
    "The rules in play concern the SLA expectation and the `lower()` call.",
    "The rules in play concern the rule “Spend max 1 minute on personalization”.",
    "The rules in play concern commit subjects and the use of `WIP`.",
    "It has 4 parts, from “Confirm the scope” to “Report”; the rules in play concern written marking.",
])
def test_well_formed_context_passes(text: str) -> None:
    assert salad(text) == []


@pytest.mark.parametrize(("phrase", "source"), [
    ("greatest iso-", ""), ("exists disk", "The file exists on disk"), ("skill md", "Keep SKILL.md short"),
    ("saw pipeline increase", "Companies saw a 40% pipeline increase"), ("convention", ""),
    ("spend", "Spend max 1 minute on personalization."), ("of the", ""),
])
def test_fragments_are_not_noun_phrases(phrase: str, source: str) -> None:
    assert noun_phrase_problem(phrase, source)


def _pred(kind: PredicateKind, subject: str, statement: str, **params: object) -> Predicate:
    return Predicate(id="R1", kind=kind, subject=subject, statement=statement, params=dict(params),
                     source=SourceRef(file="SKILL.md", line=1, quote=statement[:40]))


def test_method_context_keeps_noun_phrases_quotes_short_rules_and_drops_the_rest() -> None:
    preds = [
        _pred("limit", "sla expectation", "Every SLA expectation must stay under 4 hours for P1 tickets.",
              unit="hours", comparator="<", value=4),
        _pred("limit", "spend", "Spend max 1 minute on personalization.", unit="minutes", comparator="<=", value=1),
        _pred("limit", "exists disk", "The file exists on disk and contains at least 120 lines of substantive "
              "content.", unit="lines", comparator=">=", value=120),
        _pred("forbid_token", "code", "Never call `lower()` on the key column.", token="lower()"),
    ]
    text = method_context(preds)
    assert text == ("The rules in play concern SLA expectation, the rule “Spend max 1 minute on personalization” "
                    "and the `lower()` call.")
    assert salad(text) == []
    assert method_context([preds[2]]) == ""


def test_the_article_follows_the_column_name():
    from skill2env_dagster.tasks.compose.grammar import with_article

    assert [with_article(w) for w in ("analyte", "key", "item", "unit", "Owner")] == [
        "an analyte", "a key", "an item", "a unit", "an Owner"]


def test_generated_sentences_take_the_article_of_their_noun():
    from skill2env_dagster.tasks.compose.instruction import role

    assert role("operations_lead") == "working as an operations lead"
    assert role("data_analyst") == "putting together the numbers"


def test_the_article_follows_the_noun():
    from skill2env_dagster.tasks.compose.grammar import with_article

    assert [with_article(n) for n in ("analyte", "key", "update", "user", "unit", "interview", "URL")] == [
        "an analyte", "a key", "an update", "a user", "a unit", "an interview", "a URL"]



def test_method_context_names_a_procedure_a_table_and_a_template_in_a_few_words() -> None:
    """Each in the skill's own short terms, cut to a few words (a pasted step would give the method away)."""
    order = _pred("order", "steps", "Follow the steps",
                  steps=["Collect the raw logs from every host", "Write the summary report"])
    table = _pred("lookup", "severity", "Severity table", columns=["Error code", "Severity level"],
                  rows=[["E1", "high"], ["E2", "low"], ["E3", "mid"], ["E4", "low"]], key=0, value=1)
    template = _pred("sections", "report", "Report template", headings=["Summary", "Timeline", "Follow-ups"])
    assert method_context([order, table, template]) == (
        "It has 2 parts, from “Collect the raw logs from…” to “Write the summary report”; it maps Error code (such "
        "as “E1”, “E2” and “E3”) to Severity level; its headings run from “Summary” to “Follow-ups”.")


def test_a_procedure_without_steps_says_nothing() -> None:
    assert method_context([_pred("order", "steps", "Follow the steps", steps=[])]) == ""
