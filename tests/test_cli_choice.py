"""The Claude Code CLI the user runs, chosen: `controlplane cli install VERSION` (from the npm registry, checked, once,
safely from many processes), `controlplane cli list`, `--agent-cli VERSION|PATH|bundled|system` with its ini twin,
`@pytest.mark.agent(cli=...)`, `ClaudeAgent(cli=...)` and the audit's `--cli`; each run names the CLI it ran.

The registry is a stand-in on loopback (`$CONTROLPLANE_NPM_REGISTRY`) serving a small tarball whose `package/claude`
says "2.1.999 (Claude Code)" to --version and otherwise runs the bundled CLI; the cache is a tmp dir
(`$CONTROLPLANE_CLI_CACHE`).  No test downloads a real release."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_controlplane.clis import npm
from pytest_controlplane.clis.choice import bundled
from pytest_controlplane.errors import ConfigError

CONTROLPLANE = [sys.executable, "-m", "pytest_controlplane.cli"]
BUNDLED = bundled()
PACKAGE = npm.platform_package()


def fake_tarball(version: str = "2.1.999", padding: int = 0) -> bytes:
    """An npm tarball whose package/claude says `version` to --version and runs the bundled CLI otherwise."""
    script = (f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version} (Claude Code)"; exit 0; fi\n'
              f'exec {BUNDLED} "$@"\n').encode()  # fmt: skip
    files = {"package/package.json": json.dumps({"name": PACKAGE, "version": version}).encode(),
             "package/claude": script, "package/padding": os.urandom(padding)}  # fmt: skip
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


class Registry(http.server.ThreadingHTTPServer):
    """The platform package's listing and its tarballs, on loopback; `requests` is every path asked for."""

    def __init__(self, tarballs: dict[str, bytes]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tarballs = tarballs
        self.listed: dict[str, str] = {v: integrity(data) for v, data in tarballs.items()}  # a test may lie here
        self.requests: list[str] = []
        self.seconds = 0.0  # how long a tarball takes to send

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def listing(self) -> dict[str, object]:
        versions = {v: {"version": v, "dist": {"integrity": self.listed[v], "tarball": f"{self.url}/t/{v}.tgz"}}
                    for v in self.tarballs}  # fmt: skip
        return {"name": PACKAGE, "dist-tags": {"latest": max(self.tarballs, key=npm.version_key)}, "versions": versions}

    def downloads(self) -> int:
        return sum(path.startswith("/t/") for path in self.requests)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Registry

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)
        if self.path == "/" + PACKAGE.replace("/", "%2F"):
            body = json.dumps(self.server.listing()).encode()
        elif self.path.startswith("/t/") and self.path[3:-4] in self.server.tarballs:
            body = self.server.tarballs[self.path[3:-4]]
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for start in range(0, len(body), len(body) // 10 + 1):  # slowly, when asked: installs at once overlap
            time.sleep(self.server.seconds / 10)
            self.wfile.write(body[start : start + len(body) // 10 + 1])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A stand-in registry with 2.1.997 to 2.1.999 (the latest), and an empty cache, both in the environment."""
    server = Registry({v: fake_tarball(v) for v in ("2.1.997", "2.1.998", "2.1.999")})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CONTROLPLANE_NPM_REGISTRY", server.url)
    monkeypatch.setenv("CONTROLPLANE_CLI_CACHE", str(tmp_path / "cache"))
    yield server
    server.shutdown()
    server.server_close()


def controlplane(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CONTROLPLANE, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def wrapper(path: Path, log: Path) -> Path:
    """A claude of the user's own: it logs how it was called, then runs the bundled CLI."""
    path.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {BUNDLED} "$@"\n')
    path.chmod(0o755)
    return path


# --- controlplane cli install / list ---------------------------------------------------------------------------------


def test_an_install_is_checked_recorded_listed_and_done_once(registry, tmp_path):
    first = controlplane("cli", "install", "2.1.998")
    assert first.returncode == 0, first.stderr
    binary = tmp_path / "cache" / "2.1.998" / "claude"
    said = first.stdout.splitlines()
    assert said[0] == f"installing Claude Code 2.1.998 from {registry.url}/t/2.1.998.tgz into {binary.parent}"
    assert said[1].startswith(f"installed Claude Code 2.1.998 at {binary} in ") and len(said) == 2
    assert said[1].endswith(" s (its sha512 checked against the npm registry's)")
    assert subprocess.run([binary, "--version"], capture_output=True, text=True).stdout == "2.1.998 (Claude Code)\n"
    source = json.loads((binary.parent / "source.json").read_text())
    assert source["version"] == "2.1.998" and source["tarball"] == f"{registry.url}/t/2.1.998.tgz"
    assert source["integrity"] == integrity(registry.tarballs["2.1.998"]) and source["installed_at"]
    assert sorted(p.name for p in binary.parent.iterdir()) == ["claude", "source.json"]  # the tarball is gone

    again = controlplane("cli", "install", "2.1.998")
    assert again.stdout == f"Claude Code 2.1.998 is already installed at {binary}: nothing to do\n"
    assert registry.downloads() == 1 and registry.requests.count(registry.requests[0]) == 1  # not even a listing
    latest = controlplane("cli", "install", "latest")
    assert latest.returncode == 0 and "installed Claude Code 2.1.999 at" in latest.stdout

    listed = controlplane("cli", "list").stdout.splitlines()
    assert listed[0].startswith(f"bundled  2.1.332  {BUNDLED}  (claude-agent-sdk ") and listed[0].endswith("default)")
    assert listed[2] == f"cached in {tmp_path / 'cache'}:"
    assert [line.split()[:4] for line in listed[3:5]] == [
        ["2.1.998", f"{binary.stat().st_size / 1e6:.1f}", "MB", str(binary)],
        ["2.1.999", f"{binary.stat().st_size / 1e6:.1f}", "MB", str(tmp_path / "cache" / "2.1.999" / "claude")],
    ]
    assert f"from {registry.url}/t/2.1.998.tgz (sha512 checked, installed {source['installed_at']})" in listed[3]


def test_a_tarball_whose_sha512_differs_is_refused_and_leaves_nothing_behind(registry, tmp_path):
    registry.listed["2.1.999"] = integrity(b"what the registry signed")
    run = controlplane("cli", "install", "2.1.999")
    assert run.returncode == 2
    assert "does not have the sha512 the registry lists: expected sha512-" in run.stderr
    assert "Nothing was installed. Try again (a download cut short" in run.stderr
    assert list((tmp_path / "cache").iterdir()) == []


def test_two_installs_at_once_both_succeed_with_one_download(registry, tmp_path):
    registry.seconds = 1.0
    both = [subprocess.Popen([*CONTROLPLANE, "cli", "install", "2.1.999"], stdout=subprocess.PIPE, text=True)
            for _ in range(2)]  # fmt: skip
    said = sorted(process.communicate(timeout=60)[0] for process in both)
    assert [process.returncode for process in both] == [0, 0]
    assert "is already installed at" in said[0] and "installed Claude Code 2.1.999 at" in said[1]
    assert registry.downloads() == 1
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["2.1.999"]


def test_an_unknown_version_names_the_nearest_and_no_registry_says_the_fix(registry, tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as unknown:
        npm.release("2.1.300")
    assert f"Claude Code 2.1.300 is not on the npm registry ({PACKAGE} at {registry.url}); the nearest: 2.1.997, " \
           "2.1.998, 2.1.999." in str(unknown.value)  # fmt: skip
    monkeypatch.setenv("CONTROLPLANE_NPM_REGISTRY", "http://127.0.0.1:9")  # nothing listens there
    offline = controlplane("cli", "install", "2.1.999")
    assert offline.returncode == 2 and "ConfigError: Could not reach the npm registry at http://127.0.0.1:9" in (
        offline.stderr
    )
    assert "Check the network, or point $CONTROLPLANE_NPM_REGISTRY at a mirror" in offline.stderr


def test_a_full_disk_is_said_and_leaves_nothing_behind(registry, tmp_path):
    registry.tarballs["2.1.999"] = fake_tarball("2.1.999", padding=1 << 20)  # incompressible: 1 MB on disk
    registry.listed["2.1.999"] = integrity(registry.tarballs["2.1.999"])
    cache = tmp_path / "cache"
    cache.mkdir()
    command = f'mount -t tmpfs -o size=256k tmpfs {cache} && {" ".join(CONTROLPLANE)} cli install 2.1.999; echo left: $(ls -A {cache})'
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("no mount namespace can be made here (unshare -m)")
    run = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, timeout=60)
    assert "ConfigError: No space left on the device of" in run.stderr, run.stderr
    assert "Free some space, or point $CONTROLPLANE_CLI_CACHE at a disk with room." in run.stderr
    assert run.stdout.splitlines()[-1] == "left:"  # nothing in the cache: no release, no partial download


# --- choosing the CLI -------------------------------------------------------------------------------------------------

AGENT = """
import pytest
from claude_agent_sdk import ClaudeAgentOptions
from pytest_controlplane import ClaudeAgent


@pytest.fixture
def agent():
    return ClaudeAgent(lambda workspace: ClaudeAgentOptions(cli_path="/nowhere/claude"){cli})
"""

RUN = """
import pytest
from pytest_controlplane import text


@pytest.mark.agent(script=[text("hi")]{marker})
def test_run(agent_session):
    cli = agent_session.run("hello").cli
    print(f"RAN {{cli.version}} | {{cli.source}} | {{cli.path}} | {{cli.chosen_by}}")
"""


def project(pytester: pytest.Pytester, *, cli: str = "", marker: str = "") -> None:
    pytester.makeconftest(AGENT.format(cli=cli))
    pytester.makepyfile(test_run=RUN.format(marker=marker))


def test_agent_cli_path_is_what_runs_over_the_options_cli_path_and_the_header_says_so(pytester, tmp_path):
    own = wrapper(tmp_path / "claude", tmp_path / "calls.log")
    project(pytester)
    result = pytester.runpytest("-s", "--agent-cli", str(own), "--agent-report", str(tmp_path / "reports"))
    result.assert_outcomes(passed=1)
    [report] = (tmp_path / "reports").glob("*.html")
    assert f"<div class=meta>Claude Code 2.1.332 (path) {own}, chosen by --agent-cli</div>" in report.read_text()
    result.stdout.fnmatch_lines([
        f"claude cli: Claude Code 2.1.332 (path) {own}, chosen by --agent-cli",
        "  it wins over an agent's own cli= or cli_path; a test's @pytest.mark.agent(cli=...) wins over it",
        f"*RAN 2.1.332 | path | {own} | --agent-cli",
    ])  # fmt: skip
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[0] == "--version" and "--output-format stream-json" in calls[1], calls


def test_the_default_is_the_bundled_cli_and_a_bad_choice_lists_the_accepted_ones(pytester):
    pytester.makeconftest(AGENT.format(cli="").replace('cli_path="/nowhere/claude"', ""))
    pytester.makepyfile(test_run=RUN.format(marker=""))
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    assert "UnmeasuredCLI" not in result.stdout.str()  # the pinned release is a measured one
    result.stdout.fnmatch_lines([
        f"claude cli: Claude Code 2.1.332 (bundled) {BUNDLED}, chosen by default",
        "  an agent's own cli= or cli_path wins over it; --agent-cli VERSION|PATH|bundled|system over both",
        f"*RAN 2.1.332 | bundled | {BUNDLED} | default",
    ])  # fmt: skip
    bad = pytester.runpytest("--agent-cli", "2.1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --agent-cli: '2.1' is not a version (2.1.300), latest, bundled, system, or the "
                              "path of a claude executable (with a / in it)."])  # fmt: skip
    pytester.makeini("[pytest]\nagent_cli = tools/claude\n")
    missing = pytester.runpytest()
    missing.stderr.fnmatch_lines([f"ERROR: ini option agent_cli {pytester.path}/tools/claude: there is no executable "
                                  f"file at {pytester.path}/tools/claude."])  # fmt: skip


def test_the_marker_chooses_for_its_test_and_a_wrong_value_says_what_it_takes(pytester, tmp_path):
    own = wrapper(pytester.path / "claude", tmp_path / "calls.log")
    project(pytester, cli=', cli="bundled"', marker=', cli="./claude"')
    result = pytester.runpytest("-s", "--agent-cli", "bundled")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*RAN 2.1.332 | path | {own} | @pytest.mark.agent(cli=...)"])
    pytester.makepyfile(test_run=RUN.format(marker=", cli=2.1"))
    wrong = pytester.runpytest()
    wrong.assert_outcomes(errors=1)
    wrong.stdout.fnmatch_lines(["*ConfigError: @pytest.mark.agent(cli=...) takes a version, latest, bundled, system "
                                "or a path, got 2.1."])  # fmt: skip


def test_the_agents_own_cli_wins_over_its_options_cli_path(pytester, tmp_path):
    own = wrapper(tmp_path / "claude", tmp_path / "calls.log")
    project(pytester, cli=f", cli={str(own)!r}")
    result = pytester.runpytest("-s")
    result.stdout.fnmatch_lines([f"*RAN 2.1.332 | path | {own} | ClaudeAgent(cli=...)"])


def test_a_version_is_installed_on_first_use_once_for_every_xdist_worker(pytester, registry, tmp_path):
    project(pytester)
    pytester.makepyfile(test_second=RUN.format(marker="").replace("def test_run", "def test_second"))
    result = pytester.runpytest_subprocess("-s", "-n", "2", "--agent-cli", "latest")
    result.assert_outcomes(passed=2)
    binary = tmp_path / "cache" / "2.1.999" / "claude"
    result.stdout.fnmatch_lines([f"claude cli: Claude Code 2.1.999 (cache (npm)) {binary}, chosen by --agent-cli"])
    result.stderr.fnmatch_lines([f"pytest-controlplane: --agent-cli latest: not cached yet, installing Claude Code "
                                 f"2.1.999 from {registry.url}/t/2.1.999.tgz into {binary.parent}"])  # fmt: skip
    assert registry.downloads() == 1 and len(registry.requests) == 2  # the workers were told the version: no listing
    again = pytester.runpytest_subprocess("-s", "--agent-cli", "2.1.999", "-k", "second")
    again.stdout.fnmatch_lines([f"*RAN 2.1.999 | cache (npm) | {binary} | --agent-cli"])
    assert "not cached yet" not in again.stderr.str() and registry.downloads() == 1
    # A release the plugin's facts were not measured on runs, with one warning that says what may be off: once under
    # xdist (the controller says it), and with or without a header.
    warning = "UnmeasuredCLI: Claude Code CLI 2.1.999 is not a release these facts were measured on"
    assert result.stdout.str().count(warning) == 1, result.stdout.str()
    assert again.stdout.str().count(warning) == 1, again.stdout.str()
    quiet = pytester.runpytest_subprocess("-s", "--no-header", "--agent-cli", "2.1.999", "-k", "second")
    quiet.assert_outcomes(passed=1)
    assert quiet.stdout.str().count(warning) == 1 and "claude cli:" not in quiet.stdout.str(), quiet.stdout.str()


def test_two_clis_never_share_a_warm_pool(tmp_path):
    from claude_agent_sdk import ClaudeAgentOptions

    from pytest_controlplane import ClaudeAgent
    from pytest_controlplane.agents.pool_key import key

    agent = ClaudeAgent(lambda workspace: ClaudeAgentOptions())
    clis = [wrapper(tmp_path / name, tmp_path / "calls.log") for name in ("a", "b")]
    keys = {key(agent, tmp_path), *(key(agent.with_cli(str(cli), "--agent-cli"), tmp_path) for cli in clis)}
    assert len(keys) == 3 and all(k.endswith(":2.1.332") for k in keys)


@pytest.mark.slow
def test_the_audit_names_the_cli_it_played_in_every_file(pytester, tmp_path):
    own = wrapper(tmp_path / "claude", tmp_path / "calls.log")
    repo = pytester.path / "repo"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "settings_hooks" / "project", repo)
    run = controlplane("audit", "repo", "--quick", "--target", "write .env", "--cli", str(own), "-n", "0",
                       "--", "-k", "write:relative", cwd=pytester.path)  # fmt: skip
    assert f"claude cli: Claude Code 2.1.332 (path) {own}, chosen by --agent-cli" in run.stdout, run.stderr
    folder = pytester.path / "controlplane-report" / "repo"
    meta = json.loads((folder / "audit.json").read_text())["meta"]
    named = f"Claude Code 2.1.332 (path) {own}, chosen by --agent-cli"
    assert meta["cli"] == named and meta["command"].endswith(
        f"--cli {own} --out controlplane-report/repo -- -k write:relative"
    )  # the run again, its pytest selection too
    assert (meta["cli_version"], meta["cli_path"], meta["cli_source"]) == ("2.1.332", str(own), "path")
    sarif = json.loads((folder / "audit.sarif").read_text())["runs"][0]["properties"]
    assert sarif["cli"] == named and sarif["cli_version"] == "2.1.332"
    assert named in (folder / "audit.html").read_text()
    module = (folder / "test_audit_regression.py").read_text()
    assert f"The audit played {named} (`pytest --agent-cli {own}` plays this module with it again)." in module
    assert any("stream-json" in line for line in (tmp_path / "calls.log").read_text().splitlines())
