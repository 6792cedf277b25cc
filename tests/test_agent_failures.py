"""A crashed, hung, missing or silent agent: a clear error with its stderr tail, and nothing left behind.

Every inner test prints, once the gateway and the session are gone: what still runs in its world
(processes whose environment carries the world's marker), what appeared in the real /tmp or the
developer's ~/.claude, sockets in the world's config dir, and whether the gateway still listens.
A killed CLI leaves its socket file behind, in the world's own TMPDIR: that is where it belongs.
"""

from __future__ import annotations

import pytest

WITNESS = '''
import os
import socket
import time
import pytest
from pathlib import Path
from pytest_controlplane.agents.process import processes_of

DYING = 5.0  # seconds a SIGKILLed process may take to be gone; one never killed (a `sleep 300`) outlasts it


def still_running(world_root):
    """The world's processes still alive once any SIGKILL sent them has had time to land: SIGKILL is delivered
    asynchronously, so a process killed a moment ago may still be listed; polled on its pid until it is gone
    (or a zombie, which processes_of leaves out), up to DYING seconds."""
    deadline = time.monotonic() + DYING
    left = processes_of(world_root)
    while left and time.monotonic() < deadline:
        time.sleep(0.01)  # a poll interval, not a wait for luck: the loop ends when the pids are gone
        alive = {pid for pid, _ in processes_of(world_root)}
        left = [(pid, command) for pid, command in left if pid in alive]
    return left


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    finally:
        item.gateway_address = item.funcargs["model_gateway"]._server.server_address


def developer_config():
    config = Path(os.path.expanduser("~/.claude"))
    return {str(p): p.stat().st_mtime_ns for p in [config, *config.rglob("*")] if p.exists()}


def elsewhere(path, root):
    """A short TMPDIR link of another test's sandboxed world (tests in other workers make and remove them
    meanwhile): one gone already, or pointing elsewhere, is no litter of this world."""
    if not os.path.lexists(path):
        return True
    return os.path.islink(path) and not os.path.realpath(path).startswith(str(root))


@pytest.fixture(autouse=True)
def witness(request):
    before, config_before = set(os.listdir("/tmp")), developer_config()
    yield
    session = request.node.funcargs.get("agent_session")
    if session is not None:  # torn down after the gateway and the session
        left = still_running(session.world.root)
        # (pytest's own, and what tests another worker runs meanwhile make there, each under a name of its own: the
        # worlds of SessionMachine tests, stateful.py; the fuzz's cassettes; an audit --fix's copies, cli.py; the
        # world network's probe, networked.py)
        own = ("pytest-of-", "controlplane-machine-", "controlplane-fuzz-", "controlplane-fix-", "cp-net-probe-")
        new = sorted(n for n in set(os.listdir("/tmp")) - before if not n.startswith(own)
                     and not elsewhere(os.path.join("/tmp", n), session.world.root))
        new += [p for p in developer_config().items() if p not in config_before.items()]
        sockets = [str(p) for p in session.world.config_dir.rglob("*") if p.is_socket()]
        try:
            socket.create_connection(request.node.gateway_address, timeout=1).close()
            listening = True
        except OSError:
            listening = False
        print(f"LEFT RUNNING: {left} NEW IN /tmp: {new} SOCKETS: {sockets} GATEWAY LISTENING: {listening}")
'''

COMMAND_CONFTEST = WITNESS + '''
from pytest_controlplane import CommandAgent

COMMANDS = {
    "missing": ["/nonexistent/agent"],
    "exit3": ["sh", "-c", "echo 'reading agent.toml' >&2; echo 'config file missing: agent.toml' >&2; exit 3"],
    "killed": ["sh", "-c", "kill -9 $$"],
    "silent": ["cat"],
    "hangs": ["sh", "-c", "sleep 300 & echo 'waiting for the model' >&2; sleep 300"],
}


@pytest.fixture
def agent(request):
    return CommandAgent(COMMANDS[request.node.callspec.params["kind"]])
'''

COMMAND_TESTS = '''
import pytest
from pytest_controlplane import text


@pytest.mark.agent(script=[text("unused")], allow_unused=True, timeout=1)
@pytest.mark.parametrize("kind", ["missing", "exit3", "killed", "silent", "hangs"])
def test_run(agent_session, kind):
    agent_session.run("hello")
'''


def test_command_agent_failures_say_what_happened(pytester):
    pytester.makeconftest(COMMAND_CONFTEST)
    pytester.makepyfile(test_fail=COMMAND_TESTS)
    result = pytester.runpytest("-s")
    result.assert_outcomes(failed=5)
    result.stdout.fnmatch_lines([
        "*AgentError: CommandAgent could not start '/nonexistent/agent': No such file or directory.",
        "*Give argv?0? as an absolute path or a program on PATH*",
    ], consecutive=True)
    result.stdout.fnmatch_lines([
        "*AgentError: The agent process sh exited with code 3.",
        "*stderr tail:",
        "*  | reading agent.toml",
        "*  | config file missing: agent.toml",
        "*The stderr tail says why. The command was: sh -c echo*",
    ], consecutive=True)
    result.stdout.fnmatch_lines(["*AgentError: The agent process sh was killed by SIGKILL.*"])
    result.stdout.fnmatch_lines([
        "*AgentError: The agent finished without calling the model once.",
        "*stderr tail:",
        "*  (the agent wrote nothing to stderr)",
        "*Check that the agent honours ANTHROPIC_BASE_URL*reads its prompt (from stdin, for a CommandAgent).",
    ], consecutive=True)
    result.stdout.fnmatch_lines([
        "*AgentError: The agent process sh did not finish within 1 s; its process group was killed.",
        "*stderr tail:",
        "*  | waiting for the model",
    ], consecutive=True)
    assert result.stdout.str().count("LEFT RUNNING: [] NEW IN /tmp: [] SOCKETS: [] GATEWAY LISTENING: False") == 5


def test_a_detached_process_is_killed_and_reported(pytester):
    pytester.makeconftest(WITNESS + '''
import sys
from pytest_controlplane import CommandAgent
AGENT = "import json, os, urllib.request; urllib.request.urlopen(urllib.request.Request(" \\
        "os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=json.dumps({'model': 'm', 'max_tokens': 9, " \\
        "'messages': [{'role': 'user', 'content': 'hi'}]}).encode(), headers={'content-type': 'application/json'}))"


@pytest.fixture
def agent():
    # setsid leaves the process group: only the world's marker in its environment finds it.
    return CommandAgent(["sh", "-c", f"setsid sleep 300 </dev/null >/dev/null 2>&1 & exec {sys.executable} -c \\"$0\\"",
                         AGENT])
''')
    pytester.makepyfile('''
import pytest
from pytest_controlplane import text


@pytest.mark.agent(script=[text("hi")])
def test_run(agent_session):
    outcome = agent_session.run("hello")
    print("STRAY", [p.split(" ", 1)[1] for p in outcome.stray_processes])
''')
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*STRAY ?'sleep 300'?*"])
    assert "LEFT RUNNING: [] NEW IN /tmp: [] SOCKETS: [] GATEWAY LISTENING: False" in result.stdout.str()


def test_a_fixed_command_cannot_resume_and_says_how_to(pytester):
    pytester.makeconftest('''
import pytest
from pytest_controlplane import CommandAgent

@pytest.fixture
def agent():
    return CommandAgent(["my-agent"])
''')
    pytester.makepyfile('''
from pytest_controlplane import CommandAgent, World

def test_resume(agent, tmp_path):
    agent.run("x", world=World.create(tmp_path), base_url="http://127.0.0.1:9", session_id="s", resume="s",
              timeout=5)
''')
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*ConfigError: CommandAgent(?'my-agent'?) cannot resume a session: a fixed command "
                                 "*does not know which one.",
                                 "*Pass argv as a function, e.g. lambda session_id, resume, fork:*"])


def test_an_agent_fixture_that_is_not_an_adapter(pytester):
    pytester.makeconftest('''
import pytest

@pytest.fixture
def agent():
    return "claude"
''')
    pytester.makepyfile('''
import pytest
from pytest_controlplane import text

@pytest.mark.agent(script=[text("hi")], allow_unused=True)
def test_x(agent_session):
    pass
''')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ConfigError: The agent fixture returned 'claude', which is not an agent adapter.",
                                 "*Return ClaudeAgent(options_factory) or CommandAgent(argv) from your `agent` fixture."])


@pytest.mark.parametrize(("ini", "outcome", "line"), [
    ("agent_timeout = 1", {"failed": 1}, "*AgentError: The agent process sh did not finish within 1 s;*"),
    ("agent_timeout = soon", None, "*ini option agent_timeout: agent_timeout takes seconds (a positive number), "
                                   "*got 'soon'.*"),
])
def test_ini_timeout(pytester, ini, outcome, line):
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makeconftest('''
import pytest
from pytest_controlplane import CommandAgent

@pytest.fixture
def agent():
    return CommandAgent(["sh", "-c", "sleep 300"])
''')
    pytester.makepyfile('''
import pytest
from pytest_controlplane import text

@pytest.mark.agent(script=[text("hi")], allow_unused=True)
def test_x(agent_session):
    agent_session.run("x")
''')
    result = pytester.runpytest()
    if outcome:
        result.assert_outcomes(**outcome)
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stdout, result.stderr = result.stderr, result.stdout
    result.stdout.fnmatch_lines([line])


# --- the Claude Code CLI -------------------------------------------------------------------------

CLAUDE_CONFTEST = WITNESS + '''
from pathlib import Path
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent

FAKE = Path(__file__).parent / "fake_claude"
FAKE.write_text("#!/bin/sh\\n[ \\"$1\\" = --version ] && echo '2.1.332 (Claude Code)' && exit 0\\n"
                "echo 'fatal: cannot load the runtime: broken install' >&2\\nexit 3\\n")  # it starts, then breaks
FAKE.chmod(0o755)
CLI = {"missing": {"cli_path": "/nonexistent/claude"}, "broken": {"cli_path": str(FAKE)}, "killed": {}}


@pytest.fixture
def agent(request):
    kind = request.node.callspec.params["kind"]
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(allowed_tools=["Bash"], **CLI[kind]))
'''

CLAUDE_TESTS = '''
import pytest
from pytest_controlplane import text, tool_use


@pytest.mark.parametrize("kind", ["missing", "broken", "killed"])
def test_run(agent_session, scripted_model, kind):
    scripted_model([tool_use("Bash", {"command": "kill -9 $PPID", "description": "stop"}), text("unreachable")])
    agent_session.run("go")
'''


@pytest.mark.slow
def test_claude_cli_missing_broken_or_killed(pytester):
    pytester.makeconftest(CLAUDE_CONFTEST)
    pytester.makepyfile(test_claude=CLAUDE_TESTS)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([  # said before anything starts
        "*ConfigError: ClaudeAgentOptions(cli_path=...) /nonexistent/claude: there is no executable file at "
        "/nonexistent/claude.",
        "*Fix the path, or choose another CLI: --agent-cli VERSION (from the npm registry), bundled, system or a PATH.",
    ], consecutive=True)
    result.stdout.fnmatch_lines([
        # "exited with code 3", or "stopped unexpectedly" when the SDK loses the race to read the exit code
        "*AgentError: The Claude Code CLI [es]*",  # exited, or stopped
        "*stderr tail:",
        "*  | fatal: cannot load the runtime: broken install",
    ], consecutive=True)
    result.stdout.fnmatch_lines([
        '*AgentError: The Claude Code CLI * during Bash {"command": "kill -9 $PPID", *}*',
    ])
    assert result.stdout.str().count("LEFT RUNNING: [] NEW IN /tmp: [] SOCKETS: [] GATEWAY LISTENING: False") == 3
