"""The judge's view of the final workspace: every file written or changed, whole, with its diff, within a budget;
cut only on character boundaries, and marked; and the step numbers explained in the judge's prompt."""

from __future__ import annotations

from pydantic import SecretStr

from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.rollout import RewardForm
from skill2env_dagster.rollouts.judge import Judge, bullets_of
from skill2env_dagster.rollouts.settings import JudgeSettings
from skill2env_dagster.rollouts.workspace import FileState, render

PROGRAM = "".join(f"qty_{i} = 'é€'  # line {i}\n" for i in range(300))  # ~9 kB, multi-byte characters


def test_every_written_file_is_shown_whole_with_its_diff():
    files = [FileState("/app/report.py", "added", len(PROGRAM.encode()), PROGRAM.encode()),
             FileState("/app/data.csv", "changed", 12, b"a,b\n1,2\n3,9\n", original=b"a,b\n1,2\n3,4\n")]
    view = render(["added: /app/report.py", "changed: /app/data.csv"], files, 30_000)
    assert PROGRAM in view  # whole: not a head
    assert "=== /app/data.csv (changed, 12 bytes)" in view
    assert "-3,4\n+3,9" in view and "--- final content:\na,b\n1,2\n3,9" in view
    assert view.startswith("2 path(s) changed\nadded: /app/report.py\nchanged: /app/data.csv\n")


def test_the_budget_cuts_on_character_boundaries_and_says_so():
    data = PROGRAM.encode()
    for budget in range(3000, 3010):
        view = render(["added: /app/report.py"], [FileState("/app/report.py", "added", len(data), data)], budget)
        assert len(view) <= budget and "\ufffd" not in view
        assert "more characters of /app/report.py not shown: the budget is spent" in view
    # A file read only in part (the fetch cap cut a character in two) loses that character, never shows U+FFFD.
    part = data[:1001]
    view = render([], [FileState("/app/report.py", "added", len(data), part)], 30_000)
    assert "\ufffd" not in view and f"{len(data) - 1001} more bytes of this file were not read" in view


def test_files_beyond_the_budget_are_named_and_binaries_summarised():
    big = [FileState(f"/app/f{i}.txt", "added", 3000, b"x" * 3000) for i in range(5)]
    view = render([f"added: /app/f{i}.txt" for i in range(5)] + ["added: /app/blob"],
                  [*big, FileState("/app/blob", "added", 4, b"\0\1\2\3")], 7000)
    assert len(view) <= 7000 + 200 and "not shown, the budget is spent:" in view and "/app/blob" in view
    assert "binary, sha256" in render([], [FileState("/app/blob", "added", 4, b"\0\1\2\3")], 1000)


def test_the_judge_is_told_why_the_agents_steps_start_at_3():
    steps = [{"step_id": 1, "source": "system", "message": "sys"}, {"step_id": 2, "source": "user", "message": "do"},
             {"step_id": 3, "source": "agent", "message": "done"}]
    traj = AtifTrajectory(session_id="s", agent={"name": "a", "version": "1"}, steps=steps)
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="judge", api_key=SecretStr("k"), cache_dir="")
    judge = Judge(LLMClient(cfg), JudgeSettings(), RewardForm())
    user = judge.messages("Count.", bullets_of("## Must-do\n- x\n## Must-avoid\n- y\n## Best-practice\n- z\n"), traj,
                          "1 path(s) changed")[1]["content"]
    assert "Steps 1–2 are what the agent was given (system, user" in user
    assert "the agent's own steps start at 3" in user
    assert "in its final state, whole, with its diff" in user
