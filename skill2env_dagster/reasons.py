"""Every reason code the pipeline records, and the exceptions that carry one.

Expected outcomes (a screened-out skill, a rejected task) are values carrying a ReasonCode; exceptions are for
broken infrastructure or bugs, and they carry a code too so that a failed run still says why.
"""

from __future__ import annotations

from enum import StrEnum


class ReasonCode(StrEnum):
    # --- crawl / bundle -------------------------------------------------------------------------
    SYMLINK_ESCAPE = "symlink_escape"
    FILE_TOO_LARGE = "file_too_large"
    SKILL_TOO_LARGE = "skill_too_large"
    TOO_MANY_FILES = "too_many_files"
    UNREADABLE = "unreadable"
    SOURCE_UNAVAILABLE = "source_unavailable"
    # --- parse ----------------------------------------------------------------------------------
    NO_FRONTMATTER = "no_frontmatter"
    INVALID_YAML = "invalid_yaml"
    MISSING_NAME = "missing_name"
    MISSING_DESCRIPTION = "missing_description"
    NOT_UTF8 = "not_utf8"
    EMPTY_SKILL = "empty_skill"
    TEST_FIXTURE = "test_fixture"
    # --- screening ------------------------------------------------------------------------------
    NEEDS_EXTERNAL_ACCOUNT = "needs_external_account"
    NEEDS_LIVE_SERVICE = "needs_live_service"
    NEEDS_HARDWARE = "needs_hardware"
    OS_OR_GUI_SPECIFIC = "os_or_gui_specific"
    PERSONA_ONLY = "persona_only"
    NO_ACTIONABLE_CONTENT = "no_actionable_content"
    LICENCE_NOT_ALLOWED = "licence_not_allowed"
    LICENCE_UNKNOWN = "licence_unknown"
    MALICIOUS = "malicious"
    HARMFUL = "harmful"
    # informational, never blocking: a live service documented well enough for a local stand-in
    STANDIN_POSSIBLE = "standin_possible"
    # --- dedup ----------------------------------------------------------------------------------
    EXACT_DUPLICATE = "exact_duplicate"
    NEAR_DUPLICATE = "near_duplicate"
    # --- planning / creation --------------------------------------------------------------------
    NOT_ELIGIBLE = "not_eligible"
    LLM_UNAVAILABLE = "llm_unavailable"
    LLM_SCHEMA_VIOLATION = "llm_schema_violation"
    LLM_RATE_LIMITED = "llm_rate_limited"
    # the endpoint's settings are wrong (key, model, base URL, an unsupported parameter): no retry can fix it
    LLM_MISCONFIGURED = "llm_misconfigured"
    # the server refused this one request (e.g. the prompt exceeds the model's context): a verdict on the input
    LLM_REQUEST_REJECTED = "llm_request_rejected"
    CREATOR_CONTRACT_FAILED = "creator_contract_failed"
    # the creator agent ran out of turns, tokens or wall time before its task was frozen and solved
    CREATOR_BUDGET_EXHAUSTED = "creator_budget_exhausted"
    # the creator agent repeated the same failing tool call without changing its draft in between
    CREATOR_LOOP = "creator_loop"
    # the creator agent stopped calling tools before its task was complete (reminders did not help)
    CREATOR_INCOMPLETE = "creator_incomplete"
    TASK_TOO_LARGE = "task_too_large"
    GRADING_MODIFIED = "grading_modified"
    CONTAMINATED = "contaminated"
    # the offline generator found no rule, table, procedure or template in the skill it can check
    NO_CHECKABLE_RULE = "no_checkable_rule"
    # --- gates ----------------------------------------------------------------------------------
    STATIC_VALIDATION_FAILED = "static_validation_failed"
    WORKFLOW_MISMATCH = "workflow_mismatch"  # the task grades rules the workflow it is filed under was not planned on
    BASE_IMAGE_POLICY = "base_image_policy"
    REGISTRY_UNAVAILABLE = "registry_unavailable"
    DOCKER_UNAVAILABLE = "docker_unavailable"
    BUILD_FAILED = "build_failed"
    # a task's stand-in service (environment/docker-compose.yaml) stopped or never answered its health check
    SERVICE_FAILED = "service_failed"
    ORACLE_FAILED = "oracle_failed"
    ORACLE_TIMEOUT = "oracle_timeout"
    NOP_FAILED = "nop_failed"
    WRONG_SOLUTION_PASSED = "wrong_solution_passed"
    REWARD_MISSING = "reward_missing"
    WRONG_SOLUTION_TIMEOUT = "wrong_solution_timeout"
    REWARD_EMPTY = "reward_empty"
    REWARD_INVALID = "reward_invalid"
    VERIFIER_TIMEOUT = "verifier_timeout"
    IMAGE_LEAKS_GRADING = "image_leaks_grading"
    CANCELLED = "cancelled"
    INTERNAL_ERROR = "internal_error"
    # --- gates: verifier robustness (mutants, cheats, tamper kit) -------------------------------
    VERIFIER_INSENSITIVE = "verifier_insensitive"
    SHORTCUT_PASSED = "shortcut_passed"
    SKILL_BLIND_BASELINE_PASSED = "skill_blind_baseline_passed"  # a tool that never read the skill scored >= 0.5
    TAMPER_VULNERABLE = "tamper_vulnerable"
    # the verifier ran solver code (a program the solver wrote or could change) that could read /tests or /solution
    ANSWER_KEY_READABLE = "answer_key_readable"
    # --- probe / export -------------------------------------------------------------------------
    TASK_METADATA_INVALID = "task_metadata_invalid"
    SOURCE_SKILL_UNKNOWN = "source_skill_unknown"
    # --- rollouts / judge -----------------------------------------------------------------------
    NO_MODEL = "no_model"  # no solver/judge endpoint configured: skipped, never a fake score
    NO_RETAINED_TASKS = "no_retained_tasks"
    CONTAINER_DIED = "container_died"
    TAMPER_DETECTED = "tamper_detected"  # the agent changed the verifier's toolchain: reward 0, scored
    REAP_FAILED = "reap_failed"  # the agent's processes could not be stopped (e.g. a fork bomb): reward 0, scored
    JUDGE_FAILED = "judge_failed"
    # The judge does not rate the task's Oracle above its no-op by the set margin: its term is kept out of that
    # task's rewards (r = r_V) and the report says so.
    JUDGE_MISCALIBRATED = "judge_miscalibrated"
    # A hardening rebuild the previous version's reference solution still solves (mean r_V above the too_easy
    # threshold): it demands nothing new, so the round is rejected and the previous version stands.
    HARDENING_NOT_HARDER = "hardening_not_harder"


# Which codes describe broken infrastructure (worth a retry) rather than a genuine verdict on the input.
INFRA_CODES: frozenset[ReasonCode] = frozenset(
    {
        ReasonCode.SOURCE_UNAVAILABLE,
        ReasonCode.LLM_UNAVAILABLE,
        ReasonCode.LLM_RATE_LIMITED,
        ReasonCode.REGISTRY_UNAVAILABLE,
        ReasonCode.DOCKER_UNAVAILABLE,
        ReasonCode.CANCELLED,
        ReasonCode.INTERNAL_ERROR,
    }
)


# Screening codes that take a skill out of the pipeline (skillhub/screen/engine.py returns them) ...
BLOCKING_CODES: frozenset[ReasonCode] = frozenset({
    ReasonCode.NEEDS_EXTERNAL_ACCOUNT, ReasonCode.NEEDS_LIVE_SERVICE, ReasonCode.NEEDS_HARDWARE,
    ReasonCode.OS_OR_GUI_SPECIFIC, ReasonCode.PERSONA_ONLY, ReasonCode.NO_ACTIONABLE_CONTENT,
    ReasonCode.LICENCE_NOT_ALLOWED, ReasonCode.MALICIOUS, ReasonCode.HARMFUL,
})
# ... and findings recorded as evidence only: they screen nothing out (the funnel shows them apart).
INFO_CODES: frozenset[ReasonCode] = frozenset({ReasonCode.LICENCE_UNKNOWN, ReasonCode.STANDIN_POSSIBLE})

# The codes of a model call that failed because of the endpoint (down, throttled, misconfigured), not the input.
LLM_ENDPOINT_CODES: frozenset[ReasonCode] = frozenset(
    {ReasonCode.LLM_UNAVAILABLE, ReasonCode.LLM_RATE_LIMITED, ReasonCode.LLM_MISCONFIGURED}
)


def is_retryable(code: ReasonCode) -> bool:
    """Run retries are for infrastructure failures only, never for genuine verdicts."""
    return code in INFRA_CODES


class Skill2EnvError(Exception):
    """Base error: always names a reason code so a failed run says why."""

    def __init__(self, reason: ReasonCode, message: str) -> None:
        super().__init__(f"[{reason.value}] {message}")
        self.reason = reason


class InfraError(Skill2EnvError):
    """The machine, engine, registry, network or model endpoint failed; the input may be fine."""


class StoreError(Skill2EnvError):
    """An artifact on disk is missing or does not validate against its model."""


class InputError(Skill2EnvError):
    """The user's input (config, task folder, source) is unusable; the message says how to fix it."""
