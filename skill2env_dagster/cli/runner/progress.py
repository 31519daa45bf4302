"""The progress view: one bar over skills with the stage counts so far and an ETA (rich), or one plain line per
finished skill when the terminal is not interactive (CI logs, pipes)."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from skill2env_dagster.cli.runner.outcome import PartitionOutcome
from skill2env_dagster.export.funnel import SkillCounts


def stage_line(counts: SkillCounts, failed: int, up_to_date: int) -> str:
    rejected = sum(counts.rejected_by_reason.values())
    top = ", ".join(f"{r} {n}" for r, n in sorted(counts.rejected_by_reason.items(), key=lambda x: -x[1])[:3])
    return (f"planned {counts.planned} · created {counts.created} · retained {counts.retained} · "
            f"rejected {rejected}{f' ({top})' if top else ''} · up to date {up_to_date} · failed {failed}")


class ProgressView:
    """Call `start(total)`, then `done(outcome, counts)` per finished skill, then `stop()`."""

    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self.console = Console(file=stream, stderr=False)
        self.live = enabled and self.console.is_terminal
        self.plain = enabled and not self.live
        self.counts, self.failed, self.up_to_date, self.finished, self.total = SkillCounts(), 0, 0, 0, 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def say(self, text: str) -> None:
        """A line above the bar (or on its own when there is no bar)."""
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def start(self, total: int) -> None:
        self.total = total
        if not self.live:
            return
        self.progress = Progress(TextColumn("skills"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[stages]}"),
                                 console=self.console, transient=False)
        self.progress.start()
        self.task = self.progress.add_task("skills", total=total, stages=stage_line(self.counts, 0, 0))

    def done(self, outcome: PartitionOutcome, counts: SkillCounts) -> None:
        self.finished += 1
        self.counts = self.counts + counts
        self.failed += outcome.status in ("failed", "interrupted")
        self.up_to_date += outcome.status == "up_to_date"
        line = stage_line(self.counts, self.failed, self.up_to_date)
        if self.progress is not None and self.task is not None:
            if outcome.failure is not None:
                self.progress.console.print(f"failed {outcome.key}: {outcome.failure.stage} "
                                            f"{outcome.failure.reason}", highlight=False, markup=False)
            self.progress.update(self.task, advance=1, stages=line)
        elif self.plain:
            extra = f" ({outcome.failure.stage} {outcome.failure.reason})" if outcome.failure else ""
            self.say(f"[{self.finished}/{self.total}] {outcome.key}: {outcome.status}{extra} · {line}")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
