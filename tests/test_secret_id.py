"""Masks are keyed: a report names a secret by an HMAC under a key kept on the machine (CONTROLPLANE_MASK_KEY, else a
key file made on first use), and `controlplane secret-id` prints the mask a report shows for a value."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_controlplane.canary import mask_key
from pytest_controlplane.canary.masking import redact

SECRET = "Tr1alPassw0rd-hunter2"
MASK = re.compile(r"«secret, id [0-9a-f]{8}»")


def environment(config: Path, key: str | None = None) -> dict[str, str]:
    """This environment with `config` for the key file (never the real home's), and `key` for the variable, if any."""
    env = {k: v for k, v in os.environ.items() if k != mask_key.ENV}
    return {**env, "XDG_CONFIG_HOME": str(config), "HOME": str(config.parent), **({mask_key.ENV: key} if key else {})}


def controlplane(*args: str, config: Path, key: str | None = None, stdin: str | None = None) -> str:
    """The output of `controlplane ARGS`, run in a process of its own (which reads its key anew)."""
    done = subprocess.run([sys.executable, "-m", "pytest_controlplane.cli", *args], input=stdin,
                          env=environment(config, key), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def keyed(value: str, key: str) -> str:
    return f"«secret, id {hmac.new(key.encode(), value.encode(), 'sha256').hexdigest()[:8]}»\n"


@pytest.fixture
def this_process_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A known mask key for this process; the one it had is back after the test."""
    monkeypatch.setenv(mask_key.ENV, "a key from the CI's secret store")
    monkeypatch.setattr(mask_key, "_key", None)  # read once per process: forget it, so the variable is read again
    return "a key from the CI's secret store"


def test_the_mask_depends_on_the_key_and_on_nothing_else(tmp_path):
    config = tmp_path / "config"
    first = controlplane("secret-id", SECRET, config=config, key="key one")
    assert first == controlplane("secret-id", SECRET, config=config, key="key one") == keyed(SECRET, "key one")
    assert MASK.fullmatch(first.strip()) and str(len(SECRET)) not in first
    assert controlplane("secret-id", SECRET, config=config, key="key two") != first
    assert controlplane("secret-id", SECRET + "!", config=config, key="key one") != first
    assert hashlib.sha256(SECRET.encode()).hexdigest()[:6] not in first
    assert not config.exists()  # the variable set: no key file made


def test_the_key_file_is_made_once_for_its_owner_only_and_reused(tmp_path):
    config = tmp_path / "config"
    key_file = config / "pytest-controlplane" / "mask.key"
    subprocess.run([sys.executable, "-c", "import pytest_controlplane.canary.masking"], check=True,
                   env=environment(config))
    assert not key_file.exists()  # not made at import: only when something is masked
    first = controlplane("secret-id", SECRET, config=config)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    key = key_file.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", key)
    assert first == keyed(SECRET, key.strip())
    assert controlplane("secret-id", SECRET, config=config) == first and key_file.read_text() == key
    assert [p.name for p in key_file.parent.iterdir()] == ["mask.key"]  # no temporary file left behind


def test_processes_making_the_key_file_at_once_share_one_key(tmp_path):
    config = tmp_path / "config"
    with ThreadPoolExecutor(4) as pool:
        masks = set(pool.map(lambda _: controlplane("secret-id", SECRET, config=config), range(4)))
    key = (config / "pytest-controlplane" / "mask.key").read_text().strip()
    assert masks == {keyed(SECRET, key)}


def test_the_variable_wins_over_the_key_file(tmp_path):
    config = tmp_path / "config"
    (config / "pytest-controlplane").mkdir(parents=True)
    (config / "pytest-controlplane" / "mask.key").write_text("the file's key\n")
    assert controlplane("secret-id", SECRET, config=config) == keyed(SECRET, "the file's key")
    assert controlplane("secret-id", SECRET, config=config, key="the variable's key") == keyed(
        SECRET, "the variable's key")


def test_without_a_key_file_to_be_had_each_process_draws_a_key(tmp_path):
    """A key file that cannot be made (here its folder would be under a file; a read-only home is the same) leaves
    masks keyed, with a key of each process's own: never the bare digest."""
    (tmp_path / "config").write_text("a file, not a folder")
    masks = {controlplane("secret-id", SECRET, config=tmp_path / "config") for _ in range(2)}
    assert len(masks) == 2 and all(MASK.fullmatch(m.strip()) for m in masks)
    assert all(hashlib.sha256(SECRET.encode()).hexdigest()[:4] not in m for m in masks)


def test_secret_id_prints_the_mask_a_report_shows(tmp_path, this_process_key):
    report = redact(f"-DB_PASSWORD={SECRET}\n", [SECRET])
    assert report == f"-DB_PASSWORD={keyed(SECRET, this_process_key)}"
    shown = report.removeprefix("-DB_PASSWORD=")
    config = tmp_path / "config"
    assert controlplane("secret-id", SECRET, config=config, key=this_process_key) == shown
    # from stdin: the value is in no shell history; one line, its line break not part of it
    assert controlplane("secret-id", config=config, key=this_process_key, stdin=f"{SECRET}\n") == shown
    assert controlplane("secret-id", "-", config=config, key=this_process_key, stdin=f"{SECRET}\r\n") == shown
    assert controlplane("secret-id", "--", "-", config=config, key=this_process_key, stdin=SECRET) == shown


def test_an_encoded_copy_is_masked_with_the_same_id_and_its_encoding_named(this_process_key):
    import base64

    shown = keyed(SECRET, this_process_key).strip()
    masked = redact(base64.b64encode(SECRET.encode()).decode(), [SECRET])
    assert masked == f"{shown[:-1]}, base64»"
    assert redact("cp-canary-0123456789abcdef", ["cp-canary-0123456789abcdef"]) == "«canary»"


def test_the_help_says_the_value_can_come_from_stdin(tmp_path):
    shown = " ".join(controlplane("secret-id", "--help", config=tmp_path / "config").split())
    assert "usage: controlplane secret-id" in shown and "stdin" in shown and "shell's history" in shown
