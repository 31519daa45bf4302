"""Assemble the stub-service stand-in for a task: contract, server, fake CLI, entrypoint, Dockerfile lines.

The server and its contract are installed below /usr (STUB_DIR), which the gates' tamper rules protect: the solve
phase cannot change the code that answers calls, nor the replay the verifier runs with that same code over the
journal the server keeps (the gates reap every process before verifying, so the verifier cannot ask a live one).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
STUB_DIR = "/usr/local/lib/s2e-stub"
SERVER = f"{STUB_DIR}/server.py"
CONTRACT = f"{STUB_DIR}/contract.json"


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


ENTRYPOINT = f"""#!/bin/bash
# Start the stub service in the background, then run whatever the container was asked to run.
python3 -I {SERVER} {CONTRACT} >/dev/null 2>&1 &
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
        f"COPY stub/ {STUB_DIR}/",
        f"RUN install -m 755 {STUB_DIR}/cli.py /usr/local/bin/{cli_name} && chmod 755 {STUB_DIR}/entrypoint.sh"
        " && mkdir -p /var/lib/s2e-stub",
        f'ENTRYPOINT ["{STUB_DIR}/entrypoint.sh"]',
        'CMD ["sleep", "infinity"]',
    ]
    return files, lines
