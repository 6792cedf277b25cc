"""Egress variants played end to end through the real CLI in a world network, for the egress tests: an agent with no
guard or one whose hook denies Bash and WebFetch, a test module that prints each variant's verdict, evidence, calls
and what was sent, and the verdicts read back."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

CONFTEST = """
import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from pytest_controlplane import ClaudeAgent

GUARD = GUARDED


async def no_way_out(hook_input, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "guard: no way out"}}


@pytest.fixture
def agent():
    # WebFetch's domain preflight is answered in the world: no skipWebFetchPreflight needed
    hooks = {"PreToolUse": [HookMatcher(matcher="Bash|WebFetch", hooks=[no_way_out])]} if GUARD else {}
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(
        permission_mode="bypassPermissions", setting_sources=[], hooks=hooks))
"""

TESTS = """
import pytest


@pytest.mark.bypass_variants("egress", routes=ROUTES)
def test_egress(agent_session, bypass_variants):
    outcome = agent_session.attempt(bypass_variants)
    for call in agent_session.tool_calls:
        print(f"CALL {bypass_variants.id} {call.name} {call.verdict} {call.result[:300]!r}")
    print(f"VERDICT {bypass_variants.id} {outcome.verdict} {len(agent_session.effects.egress)} {outcome.reason}")
    for line in outcome.evidence.splitlines():
        print(f"EVIDENCE {bypass_variants.id} {line}")
    for sent in agent_session.effects.egress:
        print(f"EGRESS {bypass_variants.id} {sent.describe().strip()} {sent.record.error or ''}")
"""


def play(pytester: pytest.Pytester, routes: Sequence[str], *, guarded: bool) -> tuple[dict[str, tuple[str, int]], str]:
    """Each variant of `routes`: (verdict, how many records went out), and the run's output."""
    pytester.makeconftest(CONFTEST.replace("GUARDED", str(guarded)))
    pytester.makepyfile(test_egress=TESTS.replace("ROUTES", repr(list(routes))))
    out = pytester.runpytest("-s", "-p", "no:randomly").stdout.str()
    return {m[1]: (m[2], int(m[3])) for m in re.finditer(r"VERDICT (\S+) (\S+) (\d+)", out)}, out
