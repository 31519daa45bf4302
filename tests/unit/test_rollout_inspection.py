"""The Oracle's look around its work (rollouts/inspection.py): it reads every input the task names, each whole
where the budget allows, no call printing more than the agent's tool keeps and the judge is shown, and marks what
it cut. The commands are run here with bash on files this test writes (read-only commands, no skill's code)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from skill2env_dagster.rollouts import inspection
from skill2env_dagster.rollouts.inspection import (
    CALL_BYTES,
    FILE_BYTES,
    Probe,
    existing_probe,
    inspection_steps,
    named_paths,
    probed_paths,
)
from tests.support.sample_register import write_sample


def _bash(command: str) -> str:
    # A sample run writes the program's output to /tmp/check (private to the episode's container in a rollout);
    # here every call gets a folder of its own: two workers running these tests at once overwrote each other's
    # /tmp/check/check.out (one case printed the other case's output).
    with tempfile.TemporaryDirectory(prefix="s2e-check-") as scratch:
        out = subprocess.run(["bash", "-c", command.replace("/tmp/check", scratch)], capture_output=True, timeout=60,
                             check=True)
    assert len(out.stdout) <= CALL_BYTES, f"one call printed {len(out.stdout)} bytes"
    return out.stdout.decode("utf-8")  # strict: a cut never splits a character


def _steps(text: str, wd: Path, deliverables: list[str] | None = None) -> tuple[list[str], list[str]]:
    paths = probed_paths(text, str(wd), deliverables or [])
    found = Probe.parse(subprocess.run(["bash", "-c", existing_probe(paths)], capture_output=True, text=True,
                                       check=True).stdout)
    return inspection_steps(text, str(wd), deliverables or [], found)


def test_the_reference_reads_what_the_task_names_and_looks_at_what_it_made():
    text = ("Each .txt file in /app/attempts is one attempt; the parts are in docs/procedure.md. Run it as "
            "`/app/bin/tool FILE.csv`; put the plan in /app/out/next_steps.csv (see https://example.org/x.md).")
    assert named_paths(text, "/app") == ["/app/attempts", "/app/docs/procedure.md", "/app/bin/tool",
                                         "/app/out/next_steps.csv"]
    found = Probe(frozenset({"/app/attempts", "/app/docs/procedure.md"}), {"/app/attempts/a.txt": 10,
                                                                          "/app/docs/procedure.md": 50},
                  {"/app/attempts": 1})
    before, after = inspection_steps(text, "/app", ["/app/out/next_steps.csv", "/app/bin/tool"], found)
    assert before[0].startswith("cd /app && find") and len(before) == 2  # both inputs fit one call
    assert "ls -la /app/attempts" in before[1] and "show /app/attempts/a.txt" in before[1]
    assert "show /app/docs/procedure.md" in before[1]
    assert len(after) == 1 and "show /app/out/next_steps.csv" in after[0] and "show /app/bin/tool" in after[0]
    # Without deliverables, the named paths that did not exist before the work are what it made.
    _, after = inspection_steps(text, "/app", [], found)
    assert after[0].index("/app/bin/tool") < after[0].index("/app/out/next_steps.csv")
    assert "/app/attempts" not in after[0]


def test_every_file_of_a_named_folder_is_shown_whole(tmp_path: Path):
    """The case an independent judge met: 13 attempt files and a procedure, cut silently at 2,500 characters so
    that it could not check several attempts. Now every file is shown, each call within the tool's limits."""
    app = tmp_path / "app"
    (app / "attempts").mkdir(parents=True)
    (app / "docs").mkdir()
    for i in range(1, 14):
        lines = [f"# a-{i:03d} mode=live", *(f"2024-06-24T08:{m:02d}:00Z done: part {m} — ok" for m in range(i % 7))]
        (app / "attempts" / f"a-{i:03d}.txt").write_text("\n".join(lines) + f"\nlast line of a-{i:03d}\n")
    (app / "docs" / "procedure.md").write_text("# Procedure\n" + "".join(f"{n}. Step {n}\n" for n in range(1, 8)))
    text = f"Each .txt file in {app}/attempts is one attempt; the parts are in docs/procedure.md. Write {app}/out.csv."
    before, after = _steps(text, app, [f"{app}/out.csv"])
    shown = "\n".join(_bash(step) for step in before[1:])
    for i in range(1, 14):
        assert f"last line of a-{i:03d}" in shown
    assert "7. Step 7" in shown and "not shown" not in shown and "not read" not in shown
    (app / "out.csv").write_text("attempt,next\n")
    assert "attempt,next" in _bash(after[0])


def test_a_cut_is_marked_and_falls_on_a_character_boundary(tmp_path: Path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "big.md").write_text("x" + "é" * 6000)  # 12,001 bytes: a cut at an even byte would split a character
    before, _ = _steps(f"Read {app}/big.md and write {app}/out.txt.", app)
    out = _bash(before[1])
    assert f"[... {12_001 - FILE_BYTES} of 12001 bytes of {app}/big.md not shown]" in out
    assert "\ufffd" not in out and out.count("é") >= (FILE_BYTES - 2) // 2


def test_a_folder_over_the_reading_budget_says_what_it_left_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(inspection, "READ_BUDGET", 6000)
    app = tmp_path / "app"
    (app / "in").mkdir(parents=True)
    for i in range(10):
        (app / "in" / f"f{i}.txt").write_text(f"file {i}\n" + "y" * 1500)
    before, _ = _steps(f"Every file in {app}/in is one record; write {app}/out.txt.", app)
    shown = "\n".join(_bash(step) for step in before[1:])
    assert "file 0" in shown and "file 9" not in shown
    assert f"more file(s) in {app}/in not read: over the reading budget]" in shown


def test_a_probe_cut_short_keeps_only_whole_lines():
    text = "D\t3\t/app/in\nF\t10\t/app/in/a.txt\nF\t20\t/app/in/b.t"
    found = Probe.parse(text, complete=False)
    assert found.existing == {"/app/in"} and found.folders == {"/app/in": 3}
    assert found.files_of("/app/in") == [("/app/in/a.txt", 10)]
    before, _ = inspection_steps("Read /app/in.", "/app", [], found)
    assert "show /app/in/a.txt" in before[1] and "2 more file(s) in /app/in not read" in before[1]


def test_without_a_probe_each_input_is_still_read_within_one_call(tmp_path: Path):
    app = tmp_path / "app"
    (app / "in").mkdir(parents=True)
    for i in range(9):
        (app / "in" / f"f{i}.txt").write_text("z" * 2000)
    before, _ = inspection_steps(f"Every file in {app}/in is a record.", str(app), [], None)
    out = _bash(before[1])
    assert "not shown]" in out and "and any later files not read here]" in out


def test_a_program_to_repair_is_read_before_the_work(tmp_path: Path):
    """A deliverable that exists before the work (a broken script to fix) is an input too: an independent judge
    docked a reference that patched lines of a script the episode never displayed."""
    app = tmp_path / "app"
    (app / "bin").mkdir(parents=True)
    (app / "bin" / "check-register").write_text("#!/usr/bin/env python3\nprint('broken')  # the line to fix\n")
    text = "The checker reports the wrong rows; fix it."  # named only as the deliverable
    before, after = _steps(text, app, [f"{app}/bin/check-register"])
    assert "# the line to fix" in "\n".join(_bash(s) for s in before[1:])
    assert f"show {app}/bin/check-register" in after[0]


def _sample_task(app: Path, program: str) -> str:
    write_sample(app, "check", program)
    return (f"Write {app}/bin/check. A sample register is in {app}/samples/register.csv, with its correct findings "
            f"in {app}/samples/findings.txt. It is run as `{app}/bin/check FILE.csv` and prints one line per breach.")


@pytest.mark.parametrize("program, verdict", [
    ("#!/bin/sh\ngrep ',active$' \"$1\" | sed 's/,active$/,R1,active/'\n", "identical to"),
    ("#!/bin/sh\ngrep ',active$' \"$1\" | sed 's/,active$/,R1,active/' | sort -r\n", "the same lines as"),
    ("#!/bin/sh\necho '1,R1,active'\n", "differs from"),
])
def test_the_program_it_wrote_is_run_on_the_sample_and_compared(tmp_path: Path, program: str, verdict: str):
    """Independent judges withheld +3..+5 from references that "wrote a general program but never ran it on the
    provided sample": the look after runs it as the instruction calls it, on the sample, and compares it with the
    sample's expected output. Real runs: the verdict is what the program printed."""
    app = tmp_path / "app"
    text = _sample_task(app, program)
    _, after = _steps(text, app, [f"{app}/bin/check"])
    assert len(after) == 2  # look at the deliverable, then run it on the sample
    out = _bash(after[1])
    assert "[exit code 0]" in out and f"{verdict} {app}/samples/findings.txt" in out
    assert "1,R1,active" in out  # its real output is shown
    if verdict == "differs from":
        assert "< 3,R1,active" in out  # the diff says what is missing


def test_a_program_that_fails_on_the_sample_shows_its_error(tmp_path: Path):
    app = tmp_path / "app"
    text = _sample_task(app, "#!/bin/sh\necho 'cannot parse' >&2\nexit 3\n")
    _, after = _steps(text, app, [f"{app}/bin/check"])
    out = _bash(after[1])
    assert "[exit code 3]" in out and "[stderr]\ncannot parse" in out and "differs from" in out


def test_no_sample_run_without_a_call_on_a_file_or_a_sample():
    """Only a deliverable the instruction shows called on one placeholder file, with a sample of that kind named;
    the expected output only where the instruction says the file is one."""
    found = Probe(frozenset({"/app/s/in.csv", "/app/s/notes.md"}), {}, {})
    assert inspection.sample_runs("Run `/app/bin/x FILE.csv` on /app/s/in.csv.", "/app", ["/app/out.csv"],
                                  found) == []  # not a deliverable
    assert inspection.sample_runs("Write /app/bin/x; see /app/s/in.csv.", "/app", ["/app/bin/x"], found) == []
    assert inspection.sample_runs("Write /app/bin/x, run as `/app/bin/x IN.csv OUT.csv`; see /app/s/in.csv.",
                                  "/app", ["/app/bin/x"], found) == []  # two placeholders: which is the input?
    assert inspection.sample_runs("Write /app/bin/x, run as `/app/bin/x FILE.json`; see /app/s/in.csv.",
                                  "/app", ["/app/bin/x"], found) == []  # no sample of that kind
    [run] = inspection.sample_runs("Write /app/bin/x, run as `/app/bin/x FILE.csv`. A sample is /app/s/in.csv; "
                                   "/app/s/notes.md has the background.", "/app", ["/app/bin/x"], found)
    assert run.argv == ("/app/bin/x", "/app/s/in.csv") and run.expected is None  # notes are not an expected output
