"""Engine-view changes, tamper evidence, output discovery and the tamper kit's inputs: pure, no Docker."""

from __future__ import annotations

import io
import tarfile

import pytest

from skill2env_dagster.gates.changes import Change, ChangeKind, leaves
from skill2env_dagster.gates.mutants import Family, Mutant
from skill2env_dagster.gates.outputs import OutputFile, OutputUnit, Shape, classify, plan_outputs
from skill2env_dagster.gates.robustness import STAGE, parse_batch, stage_tar
from skill2env_dagster.gates.tamper import TamperPolicy, glob_regex
from skill2env_dagster.gates.tamper_kit import python_modules, tool_names
from skill2env_dagster.reasons import ReasonCode

A, C, D = ChangeKind.ADDED, ChangeKind.MODIFIED, ChangeKind.DELETED
PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/opt/venv/bin")
POLICY = TamperPolicy(path_dirs=PATH, workdir="/app")


def _ch(*entries: tuple[str, ChangeKind]) -> list[Change]:
    return [Change(p, k) for p, k in entries]


def test_parent_directories_are_no_evidence_by_themselves():
    changes = _ch(("/usr", C), ("/usr/local", C), ("/usr/local/bin", C), ("/usr/local/bin/python3", A))
    assert [c.path for c in leaves(changes)] == ["/usr/local/bin/python3"]
    assert POLICY.evidence(changes) == ["A /usr/local/bin/python3 (under /usr)"]
    # A childless modified directory stays when the source cannot tell it is one (docker diff)...
    assert POLICY.evidence(_ch(("/usr/lib", C))) == ["C /usr/lib (under /usr)"]
    # ...and is dropped when it can (the upper-dir walk): a metadata change or a transient child.
    assert leaves([Change("/usr/lib", C, is_dir=True)]) == []


@pytest.mark.parametrize(
    ("path", "flagged"),
    [
        ("/usr/bin/python3", True),
        ("/bin/sh", True),
        ("/lib/x86_64-linux-gnu/libc.so.6", True),
        ("/lib64/ld-linux-x86-64.so.2", True),
        ("/etc/ld.so.preload", True),
        ("/etc/ld.so.conf.d/evil.conf", True),
        ("/etc/ld.so.cache", True),
        ("/etc/alternatives/awk", True),
        ("/tests/test.sh", True),
        ("/opt/venv/bin/python", True),  # a PATH directory
        ("/opt/venv/lib/python3.11/os.py", True),  # the prefix that owns a PATH bin directory
        ("/root/.local/lib/python3.11/site-packages/usercustomize.py", True),
        ("/app/sitecustomize.py", True),  # hooks count anywhere, the working directory included
        ("/app/.venv/lib/python3.11/site-packages/x.py", True),
        ("/srv/extra.pth", True),
        ("/usr/lib/python3/dist-packages/__pycache__/six.cpython-311.pyc", True),  # bytecode is not ignored
        ("/app/answer.txt", False),
        ("/app/__pycache__/helper.cpython-311.pyc", False),
        ("/etc/hosts", False),
        ("/root/notes.txt", False),
        ("/solution/solve.sh", False),  # our own upload
    ],
)
def test_rules(path, flagged):
    assert (POLICY.rule(path) is not None) is flagged, POLICY.rule(path)


def test_a_working_directory_under_usr_is_exempt_from_prefix_rules_only():
    policy = TamperPolicy(path_dirs=PATH, workdir="/usr/src/app")
    assert policy.rule("/usr/src/app/out.csv") is None
    assert policy.rule("/usr/src/app/sitecustomize.py") is not None
    assert policy.rule("/usr/src/other.csv") is not None


def test_waivers_are_narrow_and_some_paths_are_never_waived():
    policy = TamperPolicy(path_dirs=PATH, workdir="/app",
                          waivers=("/usr/local/bin/mytool", "/usr/local/lib/mytool/**", "/tests/**", "/usr/**"))
    assert policy.rule("/usr/local/bin/mytool") is None
    assert policy.rule("/usr/local/lib/mytool/a/b.js") is None
    assert policy.rule("/tests/test.sh") is not None
    assert policy.rule("/usr/lib/python3/dist-packages/sitecustomize.py") is not None
    assert policy.rule("/etc/ld.so.preload") is not None
    assert glob_regex("/usr/local/lib/python3*/dist-packages/**").match("/usr/local/lib/python3.11/dist-packages/a")
    assert not glob_regex("/usr/local/bin/*").match("/usr/local/bin/a/b")


def test_outputs_leave_out_caches_uploads_and_toolchain():
    changes = _ch(("/app", C), ("/app/out.csv", A), ("/app/__pycache__", A), ("/app/__pycache__/x.pyc", A),
                  ("/solution", A), ("/solution/solve.sh", A), ("/usr/local/bin/tool", A), ("/app/old.csv", D),
                  ("/root/.cache", A), ("/root/.cache/pip", A), ("/app/report", A), ("/app/report/a.md", A),
                  ("/app/report/sub", A), ("/app/report/sub/b.json", A), ("/app/single", A),
                  ("/app/single/only.txt", A))
    plan = plan_outputs(changes, POLICY, max_files=64)
    assert plan.roots == ("/app/report", "/app/out.csv", "/app/single/only.txt")
    assert plan.trees == {"/app/report"}
    assert any("/app/old.csv" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("path", "data", "mode", "shape"),
    [
        ("/app/a.csv", b"a,b\n1,2\n", 0o644, Shape.CSV),
        ("/app/a.tsv", b"a\t1\n", 0o644, Shape.TSV),
        ("/app/a.json", b'{"a": 1}', 0o644, Shape.JSON),
        ("/app/out", b'[1, 2]', 0o644, Shape.JSON),
        ("/app/a.jsonl", b'{"a": 1}\n{"a": 2}\n', 0o644, Shape.JSONL),
        ("/app/a.yaml", b"a: 1\n", 0o644, Shape.YAML),
        ("/app/a.yaml", b"just words\n", 0o644, Shape.LINES),
        ("/app/findings.txt", b"a.conf:3: R1\n", 0o644, Shape.LINES),
        ("/app/report.md", b"# Title\n", 0o644, Shape.TEXT),
        ("/app/fix.awk", b"{ print }\n", 0o644, Shape.CODE),
        ("/app/bin/tool", b"awk 1\n", 0o755, Shape.CODE),
        ("/app/run", b"#!/bin/sh\necho\n", 0o644, Shape.CODE),
        ("/app/img.png", b"\x89PNG\x00\x01", 0o644, Shape.BINARY),
        ("/app/big.csv", None, 0o644, Shape.BINARY),
    ],
)
def test_classify(path, data, mode, shape):
    assert classify(path, data, mode) is shape


def test_batch_frames_are_parsed_by_length():
    body = b'{"a": 1, "b": 0.5}\n'
    out = (b"noise\n@@S2E m0 reward.json " + str(len(body)).encode() + b"\n" + body + b"\n@@S2E broken frame\n"
           b"\n@@S2E m1 - 0\n\n@@S2E control reward.txt 2\n1\n")
    got = parse_batch(out)
    assert got["m0"].metrics == {"a": 1.0, "b": 0.5}
    assert got["m1"].reason is ReasonCode.REWARD_MISSING
    assert got["control"].metrics == {"reward": 1.0}


def test_stage_holds_the_oracle_outputs_each_mutant_and_the_tests(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test.sh").write_text("#!/bin/bash\n")
    unit = OutputUnit("/app/out", (OutputFile("/app/out/a.csv", b"x,1\n", 0o600),), is_tree=True,
                      dirs=(("/app/out", 0o750),))
    mutants = [Mutant("empty", Family.TRIVIAL, "e", (("/app/out/a.csv", b""),)),
               Mutant("delete_file", Family.DESTRUCTIVE, "d", deletes=("/app/out/a.csv",))]
    with tarfile.open(fileobj=io.BytesIO(stage_tar([unit], mutants, tmp_path / "tests"))) as tar:
        members = {m.name: m for m in tar}
        base = STAGE.strip("/")
        assert members[f"{base}/orig/app/out/a.csv"].mode == 0o600
        assert members[f"{base}/orig/app/out"].isdir() and members[f"{base}/orig/app/out"].mode == 0o750
        assert members[f"{base}/m0/app/out/a.csv"].size == 0
        assert tar.extractfile(f"{base}/m1.del.sh").read() == b"rm -rf -- /app/out/a.csv"
        clear = tar.extractfile(f"{base}/clear.sh").read()
        assert clear.startswith(b"rm -rf -- /app/out /tests /logs/verifier /tmp/*")
        assert members[f"{base}/tests/test.sh"].mode & 0o111


def test_kit_targets_come_from_the_tests(tmp_path):
    (tmp_path / "test.sh").write_text("#!/bin/bash\n# a comment with wget\nif jq -r . /app/x | grep -q y; then\n"
                                      "  python3 /tests/check.py\nfi\n")
    (tmp_path / "check.py").write_text("#!/usr/bin/env python3\nimport json, yaml\nfrom csv import reader\n"
                                       "from . import local\nimport helper\n")
    (tmp_path / "helper.py").write_text("")
    tools = tool_names(tmp_path)
    assert {"bash", "jq", "grep", "python3"} <= set(tools)
    assert "wget" not in tools and "if" not in tools and "env" not in tools
    mods = python_modules(tmp_path)
    assert {"json", "yaml", "csv"} <= set(mods) and "helper" not in mods


def test_a_swap_group_rejects_only_when_every_swap_went_unnoticed():
    from skill2env_dagster.gates.robustness import _judge_groups
    from skill2env_dagster.models.gate import AttemptKind, CheckVerdict, ShortcutAttempt

    mutants = [Mutant(f"swap_values[{i}]", Family.DESTRUCTIVE, "s", group="swap_values:/a") for i in range(2)]

    def attempts(*failed: bool) -> list[ShortcutAttempt]:
        return [ShortcutAttempt(kind=AttemptKind.MUTANT, name=m.name, family="destructive",
                                verdict=CheckVerdict.FAIL if f else CheckVerdict.PASS,
                                reason=ReasonCode.VERIFIER_INSENSITIVE if f else None)
                for m, f in zip(mutants, failed, strict=True)]

    one = attempts(True, False)  # e.g. a synthetic id swapped unnoticed, the real field noticed
    _judge_groups(mutants, one)
    assert [a.verdict for a in one] == [CheckVerdict.PASS, CheckVerdict.PASS] and "information only" in one[0].evidence
    both = attempts(True, True)
    _judge_groups(mutants, both)
    assert [a.reason for a in both] == [ReasonCode.VERIFIER_INSENSITIVE] * 2
