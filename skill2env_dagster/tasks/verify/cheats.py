"""Creator-authored cheats (`solution/cheats/*.sh`): the shortcuts a task's shape invites, written after the
freeze and after the solution. The gates run each like the Oracle; a verifier that gives any of them a mean reward
above the threshold is not retained. Each cheat does no real work: it writes a plausible-looking output from
nothing, from the shipped sample, or from everything at once."""

from __future__ import annotations

import shlex


def _write(path: str, text: str) -> str:
    return (f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0] or '/')}\n"
            f"cat > {shlex.quote(path)} <<'CHEAT_EOF'\n{text}CHEAT_EOF\n")


def script(*bodies: str) -> str:
    head = "#!/bin/bash\n# A shortcut that does none of the work; it must not earn the reward.\nset -u\n"
    return head + "".join(bodies)


def empty(paths: list[str]) -> str:
    return script(*(f"mkdir -p {shlex.quote(p.rsplit('/', 1)[0])}\n: > {shlex.quote(p)}\n" for p in paths))


def header_only(path: str, header: str) -> str:
    return script(_write(path, header + "\n"))


def rows(path: str, header: str, lines: list[str]) -> str:
    """A table written without reading anything (every candidate line, the first line of a sample, junk…)."""
    return script(_write(path, header + "\n" + "".join(f"{ln}\n" for ln in lines)))


def text_file(path: str, text: str) -> str:
    return script(_write(path, text if text.endswith("\n") else text + "\n"))


def copy(src: str, dest: str) -> str:
    return script(f"mkdir -p {shlex.quote(dest.rsplit('/', 1)[0])}\ncp {shlex.quote(src)} {shlex.quote(dest)}\n")


def program(path: str, body: str, interpreter: str = "/bin/bash") -> str:
    """An executable deliverable that only pretends (prints a fixed text, echoes its input…)."""
    return script(f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0])}\n",
                  _write(path, f"#!{interpreter}\n{body}\n"), f"chmod +x {shlex.quote(path)}\n")


def raw(body: str) -> str:
    return script(body if body.endswith("\n") else body + "\n")


def combine(*scripts: str) -> str:
    """One cheat made of several (their bodies in order, one header)."""
    head = script()
    return script(*(s[len(head):] if s.startswith(head) else s for s in scripts))
