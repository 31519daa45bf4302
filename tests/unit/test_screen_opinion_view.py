"""What the second opinion shows the model: flagged lines verbatim with file and line (context apart, each line
once), the file budget spent on the files the workflow uses (SKILL.md, the files it names, scripts, docs), and
binary, image, lock, vendored and licence files never sent but listed as left out."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.models.skill import Finding, SkillRecord
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub import opinion_view
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.skillhub.opinion import flagged_text, opinion_messages
from skill2env_dagster.skillhub.opinion import opinion_view as view_of
from skill2env_dagster.skillhub.screen.learned import RULE_ADD

SKILL = """---
name: wa-notes
description: Summarise exported WhatsApp chats into notes.
license: MIT
metadata: {"clawdbot": {"requires": {"bins": ["wacli"], "env": ["NOTION_API_KEY"]}}}
requires:
  mcp: rube
---
# WhatsApp notes

1. Export a chat as `chat.txt`, then run `python3 scripts/summarise.py chat.txt`.
2. Score it with references/01-intake-assessment.md and rubric.md.
Optionally push the summary to Notion with your NOTION_API_KEY.
"""


def _hub(tmp_path: Path, files: dict[str, str | bytes]) -> SkillRecord:
    folder = tmp_path / "hub" / "wa-notes"
    for rel, content in {"SKILL.md": SKILL, **files}.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return crawl_paths([tmp_path / "hub"]).records[0]


def _user(record: SkillRecord) -> str:
    return opinion_messages(view_of(record))[1]["content"]


def test_flagged_lines_are_the_files_own_lines_each_once_with_the_context_apart(tmp_path):
    record = _hub(tmp_path, {})
    learned_line = record.body.split("\n").index("Optionally push the summary to Notion with your NOTION_API_KEY.")
    scored = Finding(code=ReasonCode.NEEDS_LIVE_SERVICE, rule=RULE_ADD, file="SKILL.md", line=learned_line + 9,
                     text="p=0.64: Optionally push the summary to Notion with your NOTION_API_KEY.")
    record = record.model_copy(update={"findings": [*record.findings, scored]})
    assert record.reasons  # the rules flagged the frontmatter (flattened in their own evidence text)
    view = view_of(record)
    lines = SKILL.split("\n")
    assert view.flagged and all(f.text == lines[f.line - 1] for f in view.flagged)
    keys = [(f.file, f.line) for f in view.flagged]
    assert len(keys) == len(set(keys))  # a line two rules flag is listed once, with both codes
    shown = flagged_text(view)
    assert "p=0.64" not in "".join(f.text for f in view.flagged) and "classifier p=0.64" in shown
    assert "requires.mcp" not in shown and "the skill is about" not in shown
    for f in view.flagged:  # the header line, then the verbatim line on its own
        assert f"line {f.line} | flagged: " in shown and f"\n{f.text}\n" in f"\n{shown}\n"


def test_a_long_flagged_line_is_shown_as_its_verbatim_part_around_the_match(tmp_path):
    long = "x" * 900 + " export STRIPE_SECRET_KEY from your Stripe dashboard account " + "y" * 900
    record = _hub(tmp_path, {"SKILL.md": SKILL + long + "\n"})
    finding = Finding(code=ReasonCode.NEEDS_EXTERNAL_ACCOUNT, rule="test.rule", file="SKILL.md",
                      line=len(SKILL.split("\n")), text="export STRIPE_SECRET_KEY from your Stripe dashboard")
    record = record.model_copy(update={"findings": [finding],
                                       "reasons": [ReasonCode.NEEDS_EXTERNAL_ACCOUNT]})
    (flagged,) = view_of(record).flagged
    assert flagged.partial and flagged.text in long and "STRIPE_SECRET_KEY" in flagged.text
    assert len(flagged.text) <= opinion_view.MAX_LINE


def test_the_budget_goes_to_skill_md_the_files_it_names_then_scripts_then_docs(tmp_path):
    pdf = b"%PDF-1.4\n" + bytes(range(128, 256)) * 200 + b"\nendobj\n"
    record = _hub(tmp_path, {
        "scripts/summarise.py": "import sys\nprint(open(sys.argv[1]).read()[:100])\n",
        "references/01-intake-assessment.md": "# Intake\nRead the chat.\n",
        "rubric.md": "# Rubric\n- clear\n",
        "scripts/other.py": "print('unnamed script')\n",
        "docs/aside.md": "# An aside\n",
        "data/table.csv": "a,b\n1,2\n",
        "guide.pdf": pdf,
        "assets/logo.svg": "<svg xmlns='http://www.w3.org/2000/svg'></svg>\n",
        "package-lock.json": '{"lockfileVersion": 3}\n',
        "vendor/lib.js": "module.exports = 1;\n",
        "web/app.min.js": "var a=1;\n",
        "LICENSE": "MIT License\n",
    })
    view = view_of(record)
    assert [f.path for f in view.files] == ["SKILL.md", "scripts/summarise.py", "references/01-intake-assessment.md",
                                            "rubric.md", "scripts/other.py", "docs/aside.md", "data/table.csv"]
    left = {x.path: x.why for x in view.left_out}
    assert left == {"guide.pdf": "binary document, archive or media", "assets/logo.svg": "image",
                    "package-lock.json": "lock file", "vendor/lib.js": "vendored or generated",
                    "web/app.min.js": "vendored or generated", "LICENSE": "licence text"}
    user = _user(record)
    assert "%PDF" not in user and "lockfileVersion" not in user and "<svg" not in user
    assert "guide.pdf (binary document, archive or media)" in user and "package-lock.json (lock file)" in user


def test_a_large_bundle_keeps_the_named_files_and_says_what_was_over_the_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(opinion_view, "FILE_BUDGET", 4_000)
    record = _hub(tmp_path, {
        "docs/a-long-aside.md": "filler line\n" * 2_000,
        "references/01-intake-assessment.md": "# Intake\n" + "Read the chat carefully.\n" * 100,
        "scripts/summarise.py": "print('x')\n" * 50,
    })
    view = view_of(record)
    sent = {f.path: f for f in view.files}
    assert sent["SKILL.md"].whole and sent["scripts/summarise.py"].whole
    assert sent["references/01-intake-assessment.md"].whole
    assert "docs/a-long-aside.md" not in sent or not sent["docs/a-long-aside.md"].whole
    assert sum(len(f.text) for f in view.files) <= 4_000
    cut = [f for f in view.files if not f.whole]
    user = _user(record)
    for f in cut:
        assert f"File: {f.path} (first {len(f.text)} of {f.total} characters)" in user
    if "docs/a-long-aside.md" not in sent:
        assert "docs/a-long-aside.md (over the budget)" in user


def test_what_the_model_was_shown(tmp_path, monkeypatch):
    monkeypatch.setattr(opinion_view, "FILE_BUDGET", 1_200)
    record = _hub(tmp_path, {"docs/late.md": "# Late\n" + "filler line\n" * 500})
    view = view_of(record)
    late = next(f for f in view.files if f.path == "docs/late.md") if any(
        f.path == "docs/late.md" for f in view.files) else None
    early = Finding(code=ReasonCode.NEEDS_EXTERNAL_ACCOUNT, rule="r", file="SKILL.md", line=3, text="x")
    beyond = Finding(code=ReasonCode.NEEDS_EXTERNAL_ACCOUNT, rule="r", file="docs/late.md", line=480, text="x")
    whole_doc = Finding(code=ReasonCode.NO_ACTIONABLE_CONTENT, rule="r", file="SKILL.md", line=0, text="x")
    cut_doc = Finding(code=ReasonCode.NO_ACTIONABLE_CONTENT, rule="r", file="docs/late.md", line=0, text="x")
    assert view.seen(early) and view.seen(whole_doc)
    assert not view.seen(beyond) and not view.seen(cut_doc)
    assert late is None or not late.whole


def test_a_flag_in_a_file_never_sent_is_quoted_from_disk_and_a_flag_with_no_line_is_a_note(tmp_path):
    """A lock file is never sent, but its flagged line is still shown verbatim (read from disk); a flag in a binary
    document, or on no line, becomes a note that describes it; binary files are listed as left out."""
    lock = '{\n  "name": "wa-notes",\n  "resolved": "https://registry.example.org/wacli-1.0.0.tgz"\n}\n'
    record = _hub(tmp_path, {"package-lock.json": lock, "docs/guide.pdf": b"%PDF-1.4\n\x00\x01\x02binary",
                             "assets/blob.dat": b"\x00\x01\x02\x03\xff\xfe"})
    extra = [Finding(code=ReasonCode.NEEDS_LIVE_SERVICE, rule="r-lock", file="package-lock.json", line=3,
                     text="registry.example.org"),
             Finding(code=ReasonCode.NEEDS_LIVE_SERVICE, rule="r-pdf", file="docs/guide.pdf", line=2, text="portal"),
             Finding(code=ReasonCode.NEEDS_EXTERNAL_ACCOUNT, rule="r-doc", file="SKILL.md", line=0,
                     text="whole document")]
    view = view_of(record.model_copy(update={"findings": [*record.findings, *extra]}))
    sent = {f.path for f in view.files}
    assert "package-lock.json" not in sent and "docs/guide.pdf" not in sent
    (lock_line,) = [f for f in view.flagged if f.file == "package-lock.json"]
    assert (lock_line.line, lock_line.text) == (3, lock.split("\n")[2])
    notes = {(n.file, n.code) for n in view.notes}
    assert ("docs/guide.pdf", "needs_live_service") in notes and ("SKILL.md", "needs_external_account") in notes
    left = {x.path: x.why for x in view.left_out}
    assert "assets/blob.dat" in left and "package-lock.json" in left
