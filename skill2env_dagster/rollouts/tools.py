"""The agent's tools (`bash`, optionally `write_file`): their schemas, their execution, what the model sees back.

A tool call the model got wrong (arguments that are not a JSON object, a missing field, an unknown tool, a mode
that is not octal) is not executed: the model is told what was wrong, as any terminal agent would be, and the call
stays in the trajectory. File modes are part of a tool's contract: `write_file` says what mode a file gets and
takes an optional `mode` (a program the verifier executes needs its exec bit).
"""

from __future__ import annotations

import codecs
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from skill2env_dagster.llm.tools import RequestedCall
from skill2env_dagster.rollouts.sandbox import CommandResult, Sandbox

BASH, WRITE_FILE = "bash", "write_file"
MODE = re.compile(r"^0?[0-7]{3}$")
WRITE_FILE_DESCRIPTION = (
    "Create or overwrite a text file in the container (relative paths are under the working directory; parent "
    "folders are created). File modes: a new file gets mode 0644 (readable, not executable) and an existing file "
    "keeps its mode, unless `mode` is given (octal, e.g. \"0755\" for a script that is run as ./script); the "
    "result says the mode the file has.")


def tool_specs(file_write: bool) -> list[dict[str, Any]]:
    """OpenAI function-calling definitions of the tools offered."""
    specs: list[dict[str, Any]] = [{"type": "function", "function": {
        "name": BASH,
        "description": "Run one bash command in the task's Linux container (a fresh shell each call, started in "
                       "the working directory; no network). Returns the exit code and the output; long output "
                       "is shortened to its start and end. Files it creates get the shell's default mode "
                       "(0644 for files, not executable): use chmod to make a script executable.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"], "additionalProperties": False}}}]
    if file_write:
        specs.append({"type": "function", "function": {
            "name": WRITE_FILE,
            "description": WRITE_FILE_DESCRIPTION,
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"}, "content": {"type": "string"},
                "mode": {"type": "string", "pattern": MODE.pattern,
                         "description": "Optional octal file mode, e.g. \"0755\" (executable) or \"0644\"."}},
                           "required": ["path", "content"], "additionalProperties": False}}})
    return specs


@dataclass(frozen=True)
class ToolOutcome:
    """What one call did and what the model is shown."""

    text: str
    arguments: dict[str, Any]
    exit_code: int | None = None
    timed_out: bool = False
    omitted_bytes: int = 0
    capped: bool = False
    seconds: float = 0.0
    malformed: str = ""  # why the call was not executed; empty when it was


def call_arguments(call: RequestedCall) -> tuple[dict[str, Any], str]:
    """A tool call's arguments as a JSON object, or why they are not one (shown to the model)."""
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as e:
        return {}, f"arguments are not valid JSON ({e.msg} at column {e.colno})"
    if not isinstance(args, dict):
        return {}, f"arguments must be a JSON object, got {type(args).__name__}"
    return args, ""


def _arguments(call: RequestedCall, required: tuple[str, ...]) -> tuple[dict[str, Any], str]:
    args, problem = call_arguments(call)
    if problem:
        return args, problem
    missing = [k for k in required if not isinstance(args.get(k), str)]
    return args, f"missing string argument(s) {missing}" if missing else ""


def decode_head(data: bytes) -> str:
    """Bytes cut at an arbitrary end, as text: a character split by the cut is dropped, never shown as U+FFFD
    (invalid bytes elsewhere still are)."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def decode_tail(data: bytes) -> str:
    """Bytes cut at an arbitrary start, as text: the continuation bytes of a character split by the cut go."""
    start = 0
    while start < min(len(data), 3) and 0x80 <= data[start] < 0xC0:
        start += 1
    return data[start:].decode("utf-8", "replace")


def render_output(res: CommandResult, cap: int) -> tuple[str, int]:
    """The model's view of a command's output: head, a marked gap, tail; and how many bytes were left out.
    Both cuts fall on character boundaries."""
    head = decode_head(res.head) if (res.tail or res.capped) else res.head.decode("utf-8", "replace")
    tail = decode_tail(res.tail)
    omitted = max(0, res.total_bytes - len(res.head) - len(res.tail)) if res.tail else 0
    text = head + (f"\n[... {omitted} bytes of output omitted ...]\n{tail}" if res.tail else "")
    if res.capped:
        text += f"\n[output stopped at {cap} bytes; the rest was discarded]"
    return text, omitted


def _status(res: CommandResult, timeout: float) -> str:
    if res.timed_out:
        return f"[command timed out after {timeout:g}s and was killed]"
    return f"[exit code {res.exit_code}]" if res.exit_code is not None else "[exit code unknown]"


def run_tool(sandbox: Sandbox, call: RequestedCall, *, timeout: float, cap: int, file_write: bool) -> ToolOutcome:
    """Execute one call (or explain why not); SandboxGoneError propagates, the episode decides what it means."""
    start = time.perf_counter()
    if call.name == BASH:
        args, problem = _arguments(call, ("command",))
        if not problem:
            res = sandbox.exec(args["command"], timeout)
            body, omitted = render_output(res, cap)
            return ToolOutcome(f"{_status(res, timeout)}\n{body}", args, res.exit_code, res.timed_out, omitted,
                               res.capped, time.perf_counter() - start)
    elif call.name == WRITE_FILE and file_write:
        args, problem = _arguments(call, ("path", "content"))
        mode = args.get("mode")
        if not problem and mode is not None and not (isinstance(mode, str) and MODE.match(mode)):
            problem = f"mode must be an octal string such as \"0755\", got {mode!r}"
        if not problem:
            text, code = _write(sandbox, args["path"], args["content"], mode)
            return ToolOutcome(text, args, code, seconds=time.perf_counter() - start)
    else:
        args, problem = {}, f"unknown tool {call.name!r}"
    return ToolOutcome(f"error: {problem}; the call was not executed", args, malformed=problem,
                       seconds=time.perf_counter() - start)


def _write(sandbox: Sandbox, path: str, content: str, mode: str | None) -> tuple[str, int | None]:
    """write_file: the sandbox writes the content, sets `mode` when given, and says the mode the file has."""
    data = content.encode("utf-8")
    res = sandbox.write_file(path, data) if mode is None else sandbox.write_file(path, data, mode=mode)
    return res.head.decode("utf-8", "replace"), res.exit_code
