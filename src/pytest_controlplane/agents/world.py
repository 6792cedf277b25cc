"""An isolated world for one agent run: workspace, HOME, TMPDIR and Claude config dir.

The environment it builds is hermetic and offline (facts measured on the Claude Code CLI, in
docs/explanation/architecture.md): the model is the gateway, nothing else is called, retries are
off so a gateway refusal fails at once, and the ids the CLI sends are pinned so that a recorded and
a replayed run send the same requests.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import WORKSPACE_TRUST
from ..errors import ConfigError, ours
from .networked import NetworkState, network_env
from .process import WORLD_ENV

__tracebackhide__ = ours  # our errors show without our frames

DUMMY_API_KEY = "sk-ant-controlplane-dummy-key"
SHORT_TMP = 40  # the longest TMPDIR given as it is (the sandbox runtime adds its socket names to it)


def check_takes_workspace(factory: object, adapter: str, returns: str) -> None:
    """An adapter's `options_factory` is called with the workspace: say so at once, not with a TypeError later."""
    if not callable(factory):
        raise ConfigError(f"{adapter}(options_factory): pass a function workspace -> {returns}, got {factory!r}.")
    try:
        inspect.signature(factory).bind(Path("workspace"))
    except TypeError:
        raise ConfigError(
            f"{adapter}(options_factory): the factory is called with the test's workspace (a Path), "
            f"but {getattr(factory, '__name__', factory)!s} cannot take it.",
            hint=f"Write it as `lambda workspace: {returns}(...)` (ignore the argument if you do not need it).",
        ) from None
    except ValueError:
        pass  # no signature to inspect (a builtin): it will be called and can fail then


# The only variables of the surrounding process an agent gets: enough to find programs and speak the
# locale.  Everything else (tokens, proxies, ANTHROPIC_*/CLAUDE_* settings, cloud credentials) stays
# out, so a run neither leaks the developer's secrets nor depends on their shell; an adapter's own
# `env` adds what an agent really needs.
_PASSED = ("PATH", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "SHELL", "TERM", "VIRTUAL_ENV", "SYSTEMROOT")


@dataclass(frozen=True)
class World:
    """The directories of one isolated agent run, and the environment that confines it."""

    root: Path
    test_id: str = "controlplane"
    # Variables planted for the agent (a canary's plant_env); shared, so plantings made after creation count.
    planted_env: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # A network of its own for each run, when asked for (networked.py); shared by the copies of this world.
    network: NetworkState = field(default_factory=NetworkState, compare=False, hash=False)
    trust: str = "owner"  # config.WORKSPACE_TRUST: what the config dir's .claude.json says of it (seed_trust)

    @classmethod
    def create(
        cls,
        root: Path | str,
        test_id: str = "controlplane",
        *,
        template: Path | str | None = None,
        planted_env: dict[str, str] | None = None,
        trust: str = "owner",
    ) -> World:
        """Make the directories; the workspace starts as a copy of `template` (symlinks kept as symlinks).  `trust`:
        "owner" (default: the CLI trusts the workspace, as in its owner's checkout) or "clone" (a fresh clone)."""
        if trust not in WORKSPACE_TRUST:
            raise ConfigError(f"World.create(trust={trust!r}): choose one of {', '.join(WORKSPACE_TRUST)}.")
        world = cls(Path(root).resolve(), test_id, planted_env if planted_env is not None else {}, trust=trust)
        if template is not None:
            source = Path(template)
            if not source.is_dir():
                raise ConfigError(
                    f"The workspace template {source} is not a directory.",
                    hint="Point it at a folder whose contents the agent should find in its workspace.",
                )
            shutil.copytree(source, world.workspace, symlinks=True, dirs_exist_ok=True)
        for directory in (world.workspace, world.home, world.config_dir, world.tmp):
            directory.mkdir(parents=True, exist_ok=True)
        world.seed_trust()
        return world

    def seed_trust(self) -> None:
        """Write the CLI's trust in the workspace into the config dir's `.claude.json`, as the view `trust` says.

        Measured on CLI 2.1.332: the entry is `projects[<realpath of the workspace>].hasTrustDialogAccepted = true`,
        and nothing else is needed; the key is the real path (an entry under the path through a symlink, or for a
        parent folder, leaves the workspace untrusted: "Ignoring N permissions.allow entries ... this workspace has
        not been trusted").  A running CLI keeps the view it started with (agents/pool_key.py keys warm pools by it).
        """
        path = self.config_dir / ".claude.json"
        data: Any
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict):  # a new world: a pinned userID makes metadata.user_id's device_id the same
            data = {"userID": self.user_id, "hasCompletedOnboarding": True}  # in every run of this test
            path.write_text(json.dumps(data))
        projects = data.get("projects") if isinstance(data.get("projects"), dict) else {}
        key = os.path.realpath(self.workspace)
        entry = dict(projects.get(key) or {})
        if self.trust == "owner":
            entry["hasTrustDialogAccepted"] = True
        else:
            entry.pop("hasTrustDialogAccepted", None)
        projects = {**projects, key: entry} if entry else {k: v for k, v in projects.items() if k != key}
        changed = {**data, "projects": projects} if projects else {k: v for k, v in data.items() if k != "projects"}
        if changed != data:
            path.write_text(json.dumps(changed))

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def short_tmp(self) -> str:
        """TMPDIR as the agent sees it: the world's tmp, or a short link to it when its path is too long for the unix
        sockets made in it (108 bytes: the Claude Code sandbox's bridge sockets fail to be made, and the CLI then runs
        the rest of its session unsandboxed)."""
        if len(str(self.tmp)) <= SHORT_TMP:
            return str(self.tmp)
        links = Path(tempfile.gettempdir())
        for dead in links.glob("cp-??????????"):  # the links of worlds gone (their tmp went with them)
            if dead.is_symlink() and not dead.exists():
                dead.unlink(missing_ok=True)
        link = self._short_link()
        if os.path.realpath(link) != str(self.tmp):
            link.unlink(missing_ok=True)
            link.symlink_to(self.tmp, target_is_directory=True)
        return str(link)

    def release_short_tmp(self) -> None:
        """Remove the short link `short_tmp()` made, if any (when the agent that was given it has ended)."""
        link = self._short_link()
        if link.is_symlink() and os.path.realpath(link) == str(self.tmp):
            link.unlink(missing_ok=True)

    def _short_link(self) -> Path:
        return Path(tempfile.gettempdir()) / f"cp-{hashlib.sha256(str(self.root).encode()).hexdigest()[:10]}"

    @property
    def session_store_dir(self) -> Path:
        """Where a LoopAgent's SessionStore keeps its sessions (outside the workspace)."""
        return self.root / "sessions"

    @property
    def user_id(self) -> str:
        return hashlib.sha256(f"controlplane-user:{self.test_id}".encode()).hexdigest()

    @property
    def session_id(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"controlplane-session:{self.test_id}"))

    @property
    def roots(self) -> dict[str, str]:
        """Directories templated in cassettes as {{workspace}}, {{home}}, {{config}}, {{tmp}}."""
        return {
            "workspace": str(self.workspace),
            "home": str(self.home),
            "config": str(self.config_dir),
            "tmp": str(self.tmp),
        }

    def extra_env(self, path: str) -> dict[str, str]:
        """What the test added to the agent's environment: planted variables, and shims (world/bin) first on PATH."""
        extra = dict(self.planted_env)
        shims = self.root / "bin"
        if shims.is_dir():
            extra["PATH"] = f"{shims}{os.pathsep}{path}" if path else str(shims)
        return extra

    def env(self, base_url: str, *, short_tmp: bool = False) -> dict[str, str]:
        """The full environment of an agent process: a few of the parent's variables (locale, PATH), what was
        planted, plus ours; `short_tmp`: TMPDIR as `short_tmp()` gives it (the Claude Code CLI, whose sandbox
        makes its sockets there)."""
        env = {k: v for k, v in os.environ.items() if k in _PASSED or k.startswith("LC_")}
        env.update(self.extra_env(env.get("PATH", "")))
        env.update(
            {
                "ANTHROPIC_BASE_URL": base_url,
                "ANTHROPIC_API_KEY": DUMMY_API_KEY,
                "CLAUDE_CONFIG_DIR": str(self.config_dir),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
                "HOME": str(self.home),
                "TMPDIR": self.short_tmp() if short_tmp else str(self.tmp),
                # The world is the sandbox: the Claude Code CLI refuses bypassPermissions as root (CI machines run as
                # root) unless told so.  It changes nothing the CLI sends (measured on 2.1.332).
                "IS_SANDBOX": "1",
                WORLD_ENV: str(self.root),  # finds whatever the agent leaves running (see process.reap)
            }
        )
        env.update(network_env(self))  # the world CA, for TLS clients, while the world has a network of its own
        return env
