"""Recording against a stand-in is one flag: `pytest --agent-mode=record --agent-script FILE.py:NAME` serves the
scripted model for the run, records through it with no API key, and the cassettes say they come from it, not Claude.
The command every re-record hint prints follows the cassette's metadata, and works as printed.
"""

from __future__ import annotations

import shlex

import pytest
import yaml

from pytest_controlplane.gateway.rerecord import pytest_command

MODEL_SCRIPT = '''
from pytest_controlplane import ScriptedModel, text

MODEL = ScriptedModel(lambda request: text(f"answer to {request.last_user_text}"))
'''

TEST_ASK = '''
import os

import anthropic


def test_ask(model_gateway):
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="sk-ant-agent-dummy", max_retries=0)
    for prompt in os.environ["PROMPTS"].split("|"):
        try:
            reply = client.messages.create(model="claude-opus-5-5", max_tokens=64,
                                           messages=[{"role": "user", "content": prompt}])
        except anthropic.PermissionDeniedError:
            return  # a replay miss: the test fails at teardown with the details
        assert reply.content[0].text == f"answer to {prompt}"
'''

CASSETTE = "cassettes/test_ask/test_ask.yaml"
STAND_IN_SOURCE = "scripted model (pytest_controlplane.ScriptedModel served as a stand-in API), not Claude"
RECORD = ("--agent-mode=record", "--agent-script", "model_script.py:MODEL")


@pytest.fixture
def project(pytester, monkeypatch):
    """A project whose test asks the model what $PROMPTS says, and the model script to record it from; no key."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("PROMPTS", "What is 2+2?")
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_ask=TEST_ASK, model_script=MODEL_SCRIPT)
    return pytester


def metadata(pytester) -> dict:
    return yaml.safe_load((pytester.path / CASSETTE).read_text())["metadata"]["controlplane"]


def printed_command(output: str, before: str) -> list[str]:
    """The arguments of the pytest command the output prints after `before`, as a shell would split them."""
    line = next(line for line in output.splitlines() if before in line)
    command = line.split(before, 1)[1].split(" — ")[0].strip()
    words = shlex.split(command)
    assert words[0] == "pytest", command
    return words[1:]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_one_flag_records_from_the_stand_in_and_the_cassette_replays_offline_untouched(project, workers):
    project.runpytest(*RECORD, *workers).assert_outcomes(passed=1)
    assert metadata(project)["source"] == STAND_IN_SOURCE
    assert metadata(project)["script"] == "model_script.py:MODEL"
    recorded = (project.path / CASSETTE).read_bytes()
    assert b"sk-ant-agent-dummy" not in recorded and b"x-controlplane-test" not in recorded
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)  # replay: no flag, no stand-in
    assert (project.path / CASSETTE).read_bytes() == recorded


def test_a_test_records_the_same_cassette_alone_or_after_others(project):
    project.makepyfile(test_other=TEST_ASK.replace("def test_ask", "def test_other"))
    project.runpytest("test_other.py", "test_ask.py", *RECORD).assert_outcomes(passed=2)
    after_another = (project.path / CASSETTE).read_bytes()
    assert b"uri: http://stand-in.invalid/v1/messages" in after_another  # not the stand-in's port of the day
    project.runpytest("test_ask.py", *RECORD).assert_outcomes(passed=1)
    assert (project.path / CASSETTE).read_bytes() == after_another


def test_the_ini_twin_records_from_the_stand_in_and_a_replay_run_ignores_it(project):
    project.makeini("[pytest]\nagent_script = model_script.py:MODEL\n")
    project.runpytest("--agent-mode=record").assert_outcomes(passed=1)
    assert metadata(project)["script"] == "model_script.py:MODEL"
    recorded = (project.path / CASSETTE).read_bytes()
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (project.path / CASSETTE).read_bytes() == recorded


@pytest.mark.parametrize(("args", "message"), [
    (["--agent-mode=record", "--agent-script", "nope.py:MODEL"],
     ["ERROR: --agent-script: no such file 'nope.py'.", "Give the path of the .py file that defines it."]),
    (["--agent-mode=record", "--agent-script", "model_script.py"],
     ["ERROR: --agent-script takes FILE.py:NAME (a ScriptedModel, a list of turns, or a dict of them by test id), "
      "got 'model_script.py'."]),
    (["--agent-mode=record", "--agent-script", "model_script.py:MISSING"],
     ["ERROR: --agent-script: model_script.py defines no 'MISSING' (it defines MODEL)."]),
    (["--agent-mode=record", "--agent-script", "broken.py:MODEL"],
     ["ERROR: --agent-script: running broken.py raised RuntimeError: boom.",
      "Fix broken.py; `python broken.py` shows the traceback."]),
    (["--agent-script", "model_script.py:MODEL"],
     ["ERROR: --agent-script records cassettes from a stand-in (the scripted model model_script.py:MODEL serves as "
      "the API), but this run's mode is replay, which plays cassettes and calls no model.",
      "Add --agent-mode=record (or auto) to record from it. For a test answered by a script without any cassette, "
      "mark it @pytest.mark.agent(script=...) or use the scripted_model fixture."]),
    (["--agent-mode=live", "--agent-script", "model_script.py:MODEL"],
     ["ERROR: --agent-script records cassettes from a stand-in (*), but this run's mode is live, which keeps no "
      "cassettes."]),
    (["--agent-mode=record", "--agent-script", "model_script.py:MODEL", "--agent-upstream", "http://127.0.0.1:9"],
     ["ERROR: --agent-script and --agent-upstream both say where record mode forwards to: give one (--agent-script "
      "serves its scripted model as the upstream itself)."]),
])
def test_a_wrong_agent_script_is_a_usage_error_that_says_the_fix(project, args, message):
    project.makepyfile(broken="raise RuntimeError('boom')\n")
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(message, consecutive=True)
    assert not (project.path / "cassettes").exists()


def test_the_hint_of_a_missed_stand_in_cassette_re_records_it_as_printed(project, monkeypatch):
    project.runpytest(*RECORD).assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPTS", "What is 3+3?")
    missed = project.runpytest()
    missed.assert_outcomes(passed=1, errors=1)
    missed.stdout.fnmatch_lines(["*ReplayMiss: *", "*If the agent changed on purpose, re-record: pytest "
                                 "--agent-mode=record --agent-script model_script.py:MODEL 'test_ask.py::test_ask'"])
    project.runpytest(*printed_command(missed.stdout.str(), "re-record: ")).assert_outcomes(passed=1)
    assert metadata(project)["script"] == "model_script.py:MODEL"
    project.runpytest().assert_outcomes(passed=1)  # the new conversation replays


def test_the_hint_of_a_stand_in_cassette_the_agent_no_longer_plays_whole_re_records_it_as_printed(project,
                                                                                              monkeypatch):
    monkeypatch.setenv("PROMPTS", "What is 3+3?|And 4+4?")
    project.runpytest(*RECORD).assert_outcomes(passed=1)
    monkeypatch.setenv("PROMPTS", "What is 3+3?")
    unused = project.runpytest()
    unused.assert_outcomes(passed=1, errors=1)
    unused.stdout.fnmatch_lines(["*UnusedInteractions: *", "*Re-record it if that is intended: pytest "
                                 "--agent-mode=record --agent-script model_script.py:MODEL 'test_ask.py::test_ask' — "
                                 "or mark the test*"])
    project.runpytest(*printed_command(unused.stdout.str(), "if that is intended: ")).assert_outcomes(passed=1)
    assert len(yaml.safe_load((project.path / CASSETTE).read_text())["interactions"]) == 1


def test_a_corrupt_stand_in_cassette_says_how_to_record_it_from_its_metadata(project):
    project.runpytest(*RECORD).assert_outcomes(passed=1)
    path = project.path / CASSETTE
    data = yaml.safe_load(path.read_text())
    del data["interactions"][0]["response"]  # the YAML reads, the cassette does not
    path.write_text(yaml.safe_dump(data))
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CassetteCorrupt: Cassette */test_ask.yaml cannot be loaded: *",
                                 f"*Restore it (`git checkout -- */{CASSETTE}`), or record it again: pytest "
                                 "--agent-mode=record --agent-script model_script.py:MODEL 'test_ask.py::test_ask'"])
    project.runpytest(*printed_command(result.stdout.str(), "record it again: ")).assert_outcomes(passed=1)
    project.runpytest().assert_outcomes(passed=1)


def test_the_hint_of_a_cassette_from_the_api_asks_for_the_key(project, monkeypatch):
    project.runpytest(*RECORD).assert_outcomes(passed=1)
    path = project.path / CASSETTE
    # As the Anthropic API would have recorded it (this machine has no way to it).
    path.write_text(path.read_text().replace(STAND_IN_SOURCE.split(" API")[0], "Anthropic API (api.anthropic.com)")
                    .replace("    script: model_script.py:MODEL\n", ""))
    assert metadata(project)["source"].startswith("Anthropic API (api.anthropic.com)")
    monkeypatch.setenv("PROMPTS", "What is 3+3?")
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*If the agent changed on purpose, re-record: pytest --agent-mode=record "
                                 "'test_ask.py::test_ask' (with ANTHROPIC_API_KEY set)"])


@pytest.mark.parametrize(("provenance", "command"), [
    ({"source": STAND_IN_SOURCE, "script": "tests/model script.py:MODEL"},
     "pytest --agent-mode=record --agent-script 'tests/model script.py:MODEL' 't.py::test_x'"),
    ({"source": STAND_IN_SOURCE},
     "pytest --agent-mode=record --agent-script FILE.py:NAME 't.py::test_x', FILE.py:NAME naming the scripted model "
     "it was recorded from (its metadata does not say which)"),
    ({"source": "stand-in server at http://127.0.0.1:8080 (not the Anthropic API)"},
     "pytest --agent-mode=record --agent-upstream URL 't.py::test_x', URL serving again the stand-in server at "
     "http://127.0.0.1:8080 (not the Anthropic API)"),
    ({"source": "Anthropic API (api.anthropic.com)"}, "pytest --agent-mode=record 't.py::test_x' (with ANTHROPIC_API_KEY set)"),
    ({}, "pytest --agent-mode=record 't.py::test_x' (with ANTHROPIC_API_KEY set)"),
])
def test_the_record_command_follows_what_the_cassette_says_of_how_it_was_made(provenance, command):
    assert pytest_command("t.py::test_x", provenance) == command
