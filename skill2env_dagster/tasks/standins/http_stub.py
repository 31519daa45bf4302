"""Assemble the stub-service stand-in for a task: contract, server, fake CLI, Dockerfile lines, compose service.

The server runs as the task's stand-in service (environment/docker-compose.yaml, gates/services.py): a container of
its own on the task's image, sharing only the agent's loopback, so the agent reaches it at the skill's documented
127.0.0.1 address but cannot kill it, take its port, or touch the journal it keeps. The runner copies that journal
to /tests/services/<SERVICE>/ for the verifier, which replays it with the server's own code (installed below /usr,
where the tamper rules protect it). The server's code is in the agent's image too (the service runs on it); what
grades is the service's journal, which the agent's copy can never write.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skill2env_dagster.gates.services import COMPOSE_FILE, collected_path, compose_text

HERE = Path(__file__).parent
STUB_DIR = "/usr/local/lib/s2e-stub"
SERVER = f"{STUB_DIR}/server.py"
CONTRACT = f"{STUB_DIR}/contract.json"
JOURNAL = "/var/lib/s2e-stub/journal.jsonl"  # in the service's container (http_stub_server.JOURNAL)
SERVICE = "api"  # the compose service name
COLLECTED_JOURNAL = collected_path(SERVICE, JOURNAL)  # where the verifier reads it


@dataclass
class StubContract:
    collection: str  # e.g. /api/v1/reservations
    fields: list[str]
    integers: list[str]
    seed: list[dict[str, Any]]
    flaky: list[dict[str, Any]] = field(default_factory=list)  # bodies whose first POST is answered 503
    page_size: int = 5
    id_prefix: str = "R-"
    port: int = 8080

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def stub_service(contract: StubContract, cli_name: str) -> tuple[dict[str, str], list[str]]:
    """(environment files, Dockerfile lines) installing the stub, its contract and a fake CLI on PATH, and the
    compose service that runs the stub beside the agent's container."""
    files = {
        "stub/server.py": (HERE / "http_stub_server.py").read_text(),
        "stub/contract.json": contract.to_json(),
        "stub/cli.py": (HERE / "fake_cli.py").read_text(),
        COMPOSE_FILE: compose_text(SERVICE, ["python3", "-I", SERVER, CONTRACT],
                                   ["python3", "-I", SERVER, "--check", CONTRACT], [JOURNAL]),
    }
    lines = [
        f"COPY stub/ {STUB_DIR}/",
        f"RUN install -m 755 {STUB_DIR}/cli.py /usr/local/bin/{cli_name} && mkdir -p {posixpath.dirname(JOURNAL)}",
    ]
    return files, lines
