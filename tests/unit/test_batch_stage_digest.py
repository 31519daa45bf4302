"""The batch stage's digest as the host computes it: what a run could change in the stage must change it."""

from __future__ import annotations

import io
import tarfile

from skill2env_dagster.gates.script_batch import STAGE, stage_digest

BASE = STAGE.strip("/")


def _stage(*members: tuple[str, str, bytes | str]) -> bytes:
    """A stage tar of (kind, name, payload): kind file (bytes), symlink / hardlink (target name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for kind, name, payload in members:
            info = tarfile.TarInfo(f"{BASE}/{name}")
            if kind == "file":
                assert isinstance(payload, bytes)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
                continue
            assert isinstance(payload, str)
            info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
            info.linkname = payload if kind == "symlink" else f"{BASE}/{payload}"
            tar.addfile(info)
    return buf.getvalue()


def test_pointing_a_staged_symlink_elsewhere_changes_the_digest():
    before = _stage(("file", "tests/test.sh", b"exit 0\n"), ("symlink", "orig/app/data", "/app/real"))
    after = _stage(("file", "tests/test.sh", b"exit 0\n"), ("symlink", "orig/app/data", "/tmp/forged"))
    assert stage_digest(before) != stage_digest(after)


def test_a_hard_link_counts_as_the_regular_file_it_unpacks_to():
    linked = _stage(("file", "solution/a.txt", b"x\n"), ("hardlink", "solution/b.txt", "solution/a.txt"))
    copied = _stage(("file", "solution/a.txt", b"x\n"), ("file", "solution/b.txt", b"x\n"))
    assert stage_digest(linked) == stage_digest(copied)


def test_file_content_changes_the_digest_and_order_does_not():
    one = _stage(("file", "a", b"1"), ("file", "b", b"2"))
    assert stage_digest(one) == stage_digest(_stage(("file", "b", b"2"), ("file", "a", b"1")))
    assert stage_digest(one) != stage_digest(_stage(("file", "a", b"1"), ("file", "b", b"3")))
