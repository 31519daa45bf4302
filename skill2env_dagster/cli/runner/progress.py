"""The progress view: one bar over skills with the stage counts so far and an ETA (rich), or one plain line per
finished skill when the terminal is not interactive (CI logs, pipes): its verdict and tasks, then the totals."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from skill2env_dagster.cli.runner.outcome import PartitionOutcome
from skill2env_dagster.export.funnel import SkillCounts


def stage_line(counts: SkillCounts, failed: int, up_to_date: int) -> str:
    rejected = sum(counts.rejected_by_reason.values())
    top = ", ".join(f"{r} {n}" for r, n in sorted(counts.rejected_by_reason.items(), key=lambda x: -x[1])[:3])
    return (f"planned {counts.planned} · created {counts.created} · retained {counts.retained} · "
            f"rejected {rejected}{f' ({top})' if top else ''} · up to date {up_to_date} · failed {failed}")


class _Stages:
    """The line under the bar, re-rendered on every refresh (rich calls __rich__)."""

    def __init__(self) -> None:
        self.text = ""

    def __rich__(self) -> Text:
        return Text(self.text, overflow="fold")


class ProgressView:
    """Call `start(total)`, then `done(outcome, counts)` per finished skill, then `stop()`."""

    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self.console = Console(file=stream, stderr=False)
        self.interactive = enabled and self.console.is_terminal
        self.plain = enabled and not self.interactive
        self.counts, self.failed, self.up_to_date, self.finished, self.total = SkillCounts(), 0, 0, 0, 0
        self.stages = _Stages()
        self.progress: Progress | None = None
        self.live: Live | None = None
        self.task: TaskID | None = None

    def say(self, text: str) -> None:
        """A line above the bar (or on its own when there is no bar)."""
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def start(self, total: int) -> None:
        self.total = total
        if not self.interactive:
            return
        self.progress = Progress(TextColumn("skills"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=self.console)
        self.task = self.progress.add_task("skills", total=total)
        self.stages.text = stage_line(self.counts, 0, 0)
        self.live = Live(Group(self.progress, self.stages), console=self.console, refresh_per_second=4)
        self.live.start()

    def done(self, outcome: PartitionOutcome, counts: SkillCounts, verdict: str = "") -> None:
        """`counts` are this skill's (added to the totals shown); `verdict` is what the crawl decided for it."""
        self.finished += 1
        self.counts = self.counts + counts
        self.failed += outcome.status in ("failed", "interrupted")
        self.up_to_date += outcome.status == "up_to_date"
        line = stage_line(self.counts, self.failed, self.up_to_date)
        if self.progress is not None and self.task is not None:
            if outcome.failure is not None:
                self.say(f"failed {outcome.key}: {outcome.failure.stage} {outcome.failure.reason}")
            self.stages.text = line
            self.progress.update(self.task, advance=1)
        elif self.plain:
            extra = f" ({outcome.failure.stage} {outcome.failure.reason})" if outcome.failure else ""
            mine = f"{verdict}{f', {counts.created} created, {counts.retained} retained' if counts.created else ''}"
            self.say(f"[{self.finished}/{self.total}] {outcome.key}: {outcome.status}{extra}"
                     f"{f' ({mine})' if verdict else ''} · so far: {line}")

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        self.progress = None
