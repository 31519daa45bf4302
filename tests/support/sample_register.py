"""A register sample and a checker program of our own, for tests of the Oracle running a program on the sample."""

from __future__ import annotations

from pathlib import Path


def write_sample(app: Path, program_name: str, program: str) -> None:
    """app/samples/register.csv with its expected findings.txt (the active rows), and an executable app/bin/NAME."""
    (app / "samples").mkdir(parents=True)
    (app / "bin").mkdir()
    (app / "samples" / "register.csv").write_text("id,status\n1,active\n2,draft\n3,active\n")
    (app / "samples" / "findings.txt").write_text("1,R1,active\n3,R1,active\n")
    (app / "bin" / program_name).write_text(program)
    (app / "bin" / program_name).chmod(0o755)
