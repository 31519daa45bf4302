"""Assemble the stub-service stand-in for a task: contract, server, fake CLI, entrypoint, Dockerfile lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
STATE_FILE = "/var/lib/stub/state.json"


@dataclass
class StubContract:
    collection: str  # e.g. /api/v1/reservations
    fields: list[str]
    required: list[str]
    integers: list[str]
    seed: list[dict]
    id_prefix: str = "R-"
    port: int = 8080

    def to_json(self) -> str:
        return json.dumps({**self.__dict__, "state_file": STATE_FILE}, indent=1)


ENTRYPOINT = """#!/bin/bash
# Start the stub service in the background, then run whatever the container was asked to run.
python3 /opt/stub/server.py /opt/stub/contract.json >/dev/null 2>&1 &
exec "$@"
"""


def stub_service(contract: StubContract, cli_name: str) -> tuple[dict[str, str], list[str]]:
    """(environment files, Dockerfile lines) installing the stub, its contract and a fake CLI on PATH."""
    files = {
        "stub/server.py": (HERE / "http_stub_server.py").read_text(),
        "stub/contract.json": contract.to_json(),
        "stub/cli.py": (HERE / "fake_cli.py").read_text(),
        "stub/entrypoint.sh": ENTRYPOINT,
    }
    lines = [
        "COPY stub/ /opt/stub/",
        f"RUN install -m 755 /opt/stub/cli.py /usr/local/bin/{cli_name} && chmod 755 /opt/stub/entrypoint.sh",
        'ENTRYPOINT ["/opt/stub/entrypoint.sh"]',
        'CMD ["sleep", "infinity"]',
    ]
    return files, lines
