"""What we learned about an endpoint, so it is learned once: its structured-output mode and its configuration error.

- The mode (`json_schema` or `json_object`) is learned from the first refusal of `json_schema` and remembered for
  the process and on disk (`<cache_dir>/endpoints/<hash>.json`), so later partitions and later runs do not spend
  a refused request each. Delete the file, or set `S2E_LLM_STRUCTURED_MODE=json_schema`, after a server upgrade.
- A configuration error (bad key, unknown model, unsupported parameter) is remembered for the process only: every
  later call fails at once with the same error, without an HTTP request or another log line, and the next run
  (after the settings are fixed) tries again.

Keyed by (base URL, model): one server may serve models with different capabilities.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.failures import Failure

log = logging.getLogger(__name__)

WireMode = Literal["json_schema", "json_object"]
_lock = threading.Lock()
_modes: dict[tuple[str, str], WireMode] = {}
_broken: dict[tuple[str, str], Failure] = {}


class EndpointMemo(BaseModel):
    """The file remembering a learned mode; `evidence` is the server's refusal (key-free, truncated)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str
    structured_mode: WireMode
    evidence: str = Field(default="", max_length=300)


class Endpoint:
    """One (base URL, model): its wire mode and whether it is known to be misconfigured."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.key = (config.endpoint, config.model)
        digest = sha256_bytes(canonical_json(list(self.key)).encode())[:24]
        self.path = Path(config.cache_dir) / "endpoints" / f"{digest}.json" if config.cache_dir else None

    def mode(self) -> WireMode:
        """The configured mode, else the learned one (process, then disk), else json_schema."""
        if self.config.structured_mode != "auto":
            return self.config.structured_mode
        with _lock:
            if self.key in _modes:
                return _modes[self.key]
        learned = self._read()
        with _lock:
            _modes.setdefault(self.key, learned or "json_schema")
            return _modes[self.key]

    def learn(self, mode: WireMode, evidence: str) -> None:
        with _lock:
            _modes[self.key] = mode
        log.warning("endpoint %s model %s: structured output falls back to %s (remembered%s): %s",
                    self.key[0], self.key[1], mode, f" in {self.path}" if self.path else " for this process",
                    evidence[:200])
        if self.path is not None:
            memo = EndpointMemo(base_url=self.key[0], model=self.key[1], structured_mode=mode, evidence=evidence[:300])
            atomic_write_text(self.path, memo.model_dump_json(indent=1) + "\n")

    def _read(self) -> WireMode | None:
        if self.path is None or not self.path.is_file():
            return None
        try:
            memo = EndpointMemo.model_validate_json(self.path.read_text(encoding="utf-8"))
        except (ValidationError, OSError) as e:
            log.warning("endpoint memo unreadable, ignoring path=%s err=%s", self.path, type(e).__name__)
            return None
        return memo.structured_mode if (memo.base_url, memo.model) == self.key else None

    def broken(self) -> Failure | None:
        with _lock:
            return _broken.get(self.key)

    def mark_broken(self, failure: Failure) -> bool:
        """Remember a configuration error; True the first time (the caller reports it then, and only then)."""
        with _lock:
            first = self.key not in _broken
            _broken.setdefault(self.key, failure)
            return first


def forget_endpoints() -> None:
    """Drop everything learned in this process (tests; a long-lived process after a configuration fix)."""
    with _lock:
        _modes.clear()
        _broken.clear()
