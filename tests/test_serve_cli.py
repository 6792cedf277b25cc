"""`controlplane serve`: a scripted stand-in (its script restarted for each recording test) or a cassette, from a
shell; a usage error is one line and exit code 2; Ctrl-C or `kill` stops it with its cassette saved."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest
import yaml

CONTROLPLANE = str(Path(sys.executable).parent / "controlplane")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CONTROLPLANE, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "message"), [
    (["--script", "nope.py:X"], "controlplane serve: ConfigError: --script: no such file 'nope.py'. Give the path of "
                                "the .py file that defines it."),
    (["--script", "model.py:MISSING"], "controlplane serve: ConfigError: --script: model.py defines no 'MISSING' (it "
                                       "defines MODEL)."),
    (["--script", "broken.py:MODEL"], "controlplane serve: ConfigError: --script: running broken.py raised "
                                      "RuntimeError: boom. Fix broken.py; `python broken.py` shows the traceback."),
    (["--script", "model.py"], "controlplane serve: ConfigError: --script takes FILE.py:NAME (a ScriptedModel, a list "
                               "of turns, or a dict of them by test id), got 'model.py'."),
    (["--mode", "record"], "controlplane serve: ConfigError: mode='record' needs cassette=PATH."),
])
def test_a_serve_usage_error_is_one_line_and_exit_2(tmp_path, args, message):
    (tmp_path / "model.py").write_text("from pytest_controlplane import text\nMODEL = [text('hi')]\n")
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    result = run_cli("serve", *args, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


SCRIPT = '''
from pytest_controlplane import text
MODEL = [text("first answer"), text("second answer")]
BY_TEST = {"test_one": [text("one's answer")], "test_two": [text("two's answer")]}
'''

TESTS = '''
import anthropic


def ask(gateway):
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    return [client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": q}]
                                   ).content[0].text for q in ("a?", "b?")[:gateway_turns(gateway)]]


def gateway_turns(gateway):
    import os
    return int(os.environ["TURNS"])


def test_one(model_gateway):
    print("ANSWERS", ask(model_gateway))


def test_two(model_gateway):
    print("ANSWERS", ask(model_gateway))
'''


def serve(cwd: Path, *args: str, ignoring_sigint: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Start `controlplane serve ARGS` in `cwd`: the process and its base URL."""
    # A shell's background job (`cmd &`, CI runners' steps) starts with SIGINT ignored: serve stops all the same.
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignoring_sigint else None
    process = subprocess.Popen([CONTROLPLANE, "serve", *args], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=ignore)
    line = process.stdout.readline()  # blocks until the gateway listens and says where
    assert line.startswith("ANTHROPIC_BASE_URL="), (line, process.stderr.read())
    return process, line.split("=", 1)[1].strip()


@pytest.fixture
def stand_in(tmp_path):
    """Start `controlplane serve --script script.py:NAME` and give its base URL (stopped afterwards)."""
    (tmp_path / "script.py").write_text(SCRIPT)
    processes = []

    def start(name: str) -> str:
        process, url = serve(tmp_path, "--script", f"script.py:{name}")
        processes.append(process)
        return url

    yield start
    for process in processes:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def test_sigint_or_sigterm_stops_serve_and_its_cassette_is_saved(tmp_path):
    (tmp_path / "script.py").write_text(SCRIPT)
    upstream, upstream_url = serve(tmp_path, "--script", "script.py:MODEL", ignoring_sigint=True)
    recorder, url = serve(tmp_path, "--mode", "record", "--cassette", "recorded.yaml", "--upstream", upstream_url)
    try:
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        answer = client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "a?"}])
        assert answer.content[0].text == "first answer"
        recorder.send_signal(signal.SIGTERM)  # `kill`: the recorder saves what it recorded
        assert recorder.wait(timeout=30) == 0, recorder.stderr.read()
        upstream.send_signal(signal.SIGINT)  # Ctrl-C, though it was started with SIGINT ignored
        assert upstream.wait(timeout=30) == 0, upstream.stderr.read()
    finally:
        recorder.kill()
        upstream.kill()
    cassette = yaml.safe_load((tmp_path / "recorded.yaml").read_text())
    assert [i["request"]["uri"].endswith("/v1/messages") for i in cassette["interactions"]] == [True]


@pytest.mark.parametrize(("name", "turns", "expected"), [
    ("MODEL", "2", {"test_one": ["first answer", "second answer"], "test_two": ["first answer", "second answer"]}),
    ("BY_TEST", "1", {"test_one": ["one's answer"], "test_two": ["two's answer"]}),
])
def test_one_stand_in_plays_each_recording_test_its_script_from_the_start(pytester, monkeypatch, stand_in, name,
                                                                         turns, expected):
    url = stand_in(name)
    monkeypatch.setenv("TURNS", turns)
    pytester.makepyfile(test_record=TESTS)
    result = pytester.runpytest("--agent-mode=record", f"--agent-upstream={url}", "-s")
    result.assert_outcomes(passed=2)
    for test, answers in expected.items():
        cassette = yaml.safe_load((pytester.path / "cassettes" / "test_record" / f"{test}.yaml").read_text())
        texts = [i["response"]["body"]["string"] for i in cassette["interactions"]]
        assert [a for a in answers if any(a in t for t in texts)] == answers
        assert "x-controlplane-test" not in str(cassette)  # said to the stand-in, never stored
