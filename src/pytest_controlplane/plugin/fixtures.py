"""pytest wiring of the fixtures: the model gateway, the agent in its isolated world, canaries and bypass variants.
The work happens in the pytest-free core."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .. import config as settings_
from ..errors import ConfigError, ControlPlaneError
from .audit_cases import clis
from .keys import AGENT_SNIPPET, CALL_FAILED, PLANTINGS, SETTINGS
from .options import chosen_cli, workspace_trust
from .stand_in import upstream
from .warm import warm_pool

if TYPE_CHECKING:
    from ..gateway import ModelGateway, ScriptedModel


def _plantings(request: pytest.FixtureRequest) -> Any:
    """What this test's canaries planted, shared by canary_secret and agent_session (either may come first)."""
    from ..canary import Plantings

    if PLANTINGS not in request.node.stash:
        request.node.stash[PLANTINGS] = Plantings()
    return request.node.stash[PLANTINGS]


def _settings(request: pytest.FixtureRequest) -> settings_.RunSettings:
    """This test's settings, resolved once (model_gateway and agent_session both need them)."""
    if SETTINGS in request.node.stash:
        return request.node.stash[SETTINGS]
    config = request.config
    marker = request.node.get_closest_marker("agent")
    cassette_dir = config.getoption("agent_cassette_dir") or config.getini("agent_cassette_dir")
    path = Path(str(request.node.path))
    if path.is_dir():  # an --agent-audit item: its module stands for the audited directory
        path = path / "controlplane-audit.py"
    try:
        module_path = str(path.relative_to(config.rootpath))
    except ValueError:
        module_path = path.name
    run = settings_.resolve(
        marker_args=marker.args if marker else (),
        marker=marker.kwargs if marker else {},
        cli_mode=config.getoption("agent_mode"),
        env_mode=os.environ.get(settings_.MODE_ENV),
        ini_mode=config.getini("agent_mode") or None,
        cassette_dir=config.rootpath / cassette_dir,
        test_dir=path.parent,
        module_path=module_path,
        test_name=request.node.name,
        ini_timeout=config.getini("agent_timeout"),
        ini_network=bool(config.getini("agent_network")),
    )
    request.node.stash[SETTINGS] = run
    return run


@pytest.fixture
def model_gateway(request: pytest.FixtureRequest) -> Iterator[ModelGateway]:
    """The model for this test, served over HTTP at `.base_url` (point ANTHROPIC_BASE_URL there).

    Answers come from the test's cassette (replay), the upstream API (record, live, auto) or a
    scripted model (`@pytest.mark.agent(script=...)` or the `scripted_model` fixture).  A replay
    miss, an exhausted script, unplayed interactions or unused turns fail the test at teardown.
    """
    from ..gateway import ModelGateway, ScriptedModel
    from ..gateway.rerecord import pytest_command

    try:
        run = _settings(request)
        script = run.script
        if script is not None and not isinstance(script, ScriptedModel):
            script = ScriptedModel(script)
        url, stand_in = upstream(request.config) if run.mode != "replay" and script is None else (None, None)
        gateway = ModelGateway(
            mode=run.mode,
            cassette=run.cassette,
            upstream=url,
            script=script,
            api_key="" if stand_in else None,  # never the user's key to a stand-in: the agent's own dummy goes
            record_command=functools.partial(pytest_command, request.node.nodeid),
            budget=_budget(request),
            record_errors=run.record_errors,
            test_id=request.node.nodeid,
            stand_in=stand_in,
        )
        gateway.open()
    except ControlPlaneError as error:
        _fail(error)
    try:
        yield gateway
    finally:
        gateway.close(save=True)
    # When the test already failed (the agent crashed, an assertion), what it left unplayed is a
    # consequence, not news.
    try:
        gateway.check(allow_unused=run.allow_unused or request.node.stash.get(CALL_FAILED, False))
    except ControlPlaneError as error:
        _fail(error)


def _fail(error: ControlPlaneError) -> NoReturn:
    """Fail the test with our error, once: its class and message, without the plugin's frames or the exception
    it was raised while handling (pytest would print both)."""
    __tracebackhide__ = True
    raise pytest.fail.Exception(f"{type(error).__name__}: {error}", pytrace=False) from None


def _budget(request: pytest.FixtureRequest) -> Any:
    """The run's budget, if one is set: one ledger for the whole run, xdist workers included."""
    from ..gateway.budget import Budget, parse_budget

    config = request.config
    tokens, usd = parse_budget(
        config.getoption("agent_max_tokens") or config.getini("agent_max_tokens"),
        config.getoption("agent_budget_usd") or config.getini("agent_budget_usd"),
    )
    if tokens is None and usd is None:
        return None

    # Every xdist worker's basetemp sits in the same run directory: the ledger lives there.
    run_dir = request.getfixturevalue("tmp_path_factory").getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent
    return Budget(run_dir / "controlplane-budget.json", max_tokens=tokens, max_usd=usd)


@pytest.fixture
def scripted_model(model_gateway: ModelGateway) -> Callable[..., ScriptedModel]:
    """Build a `ScriptedModel` that this test's gateway serves instead of a cassette.

        model = scripted_model([tool_use("Write", {"file_path": ".env", "content": "x"}), text("done")])

    Turns are blocks, lists of blocks, or functions of the request; the whole script may be one
    function.  Turns the agent never asks for fail the test at teardown.
    """

    def make(turns: Any, *, model: str | None = None) -> ScriptedModel:
        from ..gateway import ScriptedModel

        return model_gateway.use_script(ScriptedModel(turns, model=model))

    return make


@pytest.fixture
def agent() -> Any:
    """The agent under test: override this fixture in your conftest.py (see the message it fails with)."""
    pytest.fail(f"No agent is defined for this test.\n{AGENT_SNIPPET}", pytrace=False)


@pytest.fixture
def canary_secret(request: pytest.FixtureRequest) -> Any:
    """A secret to plant and look for: `.value`, `plant_env(name)`, `plant_file(path, template)`,
    `text(template)`, `find(...)`, `assert_not_leaked(agent_session, allow=[...])`.

    Its value (`cp-canary-` + 24 characters) is derived from the test's node id, so recorded and
    replayed runs agree; in live mode it is random.  Call it for more: `canary_secret("DB_PASSWORD")`.
    Reports and effect diffs never show a value whole.
    """
    from ..canary import Canary

    live = _settings(request).mode == "live"
    return Canary.mint(request.node.nodeid, "canary_secret", pinned=not live, plantings=_plantings(request))


@pytest.fixture
def bypass_variants(request: pytest.FixtureRequest) -> Any:
    """The bypass variant this test runs with (`@pytest.mark.bypass_variants(family, target=...)` parametrizes it).

    outcome = agent_session.attempt(bypass_variants)   # setup calls, then the attempt, through your agent
    outcome.assert_held()                              # judged by the effect; says the route and how to replay
    """
    variant = getattr(request, "param", None)
    if isinstance(variant, ConfigError):
        _fail(variant)
    if variant is None:
        pytest.fail(
            "The bypass_variants fixture needs the marker: @pytest.mark.bypass_variants('write', target='.env').",
            pytrace=False,
        )
    return variant


@pytest.fixture
def agent_workspace_template() -> Path | None:
    """A folder the workspace starts as a copy of (None: empty).  Override it in a conftest.py;
    a test's @pytest.mark.agent(workspace="folder") wins over it."""
    return None


def _as_asked(request: pytest.FixtureRequest, agent: Any) -> Any:
    """`agent` with the CLI the test, the audit item or the run chose (the marker's cli=, then --agent-audit-cli's,
    then --agent-cli), the approval the run asks for (--agent-approval) and an audit item's OS sandbox level (set
    before its warm pool is chosen: a pool is one CLI's and one sandbox's)."""
    from ..clis.choice import choose

    config = request.config
    callspec = getattr(request.node, "callspec", None)
    case = callspec.params.get("agent_audit_case") if callspec else None
    marked = _settings(request).cli
    if marked:
        cli = choose(str(marked), "@pytest.mark.agent(cli=...)")
    elif axis := getattr(case, "cli", ""):  # the audit's drift axis
        cli = clis(config)[axis]
    else:
        cli = chosen_cli(config)
    if cli is not None and hasattr(agent, "with_cli"):  # else the agent's own (ClaudeAgent(cli=...), its cli_path)
        agent = agent.with_cli(cli.choice, cli.chosen_by)
    approval = config.getoption("agent_approval") or config.getini("agent_approval")
    if approval and hasattr(agent, "with_approval"):  # else the agent's own (ClaudeAgent(approval=...), "deny")
        agent = agent.with_approval(approval)
    level = getattr(case, "sandbox", "")
    if level and hasattr(agent, "with_sandbox"):  # else attempt_case says the agent has no sandbox
        agent = agent.with_sandbox(level)
    return agent


@pytest.fixture
def agent_session(
    request: pytest.FixtureRequest,
    agent: Any,
    model_gateway: ModelGateway,
    agent_workspace_template: Path | None,
    tmp_path: Path,
) -> Any:
    """The `agent` run in an isolated world (workspace, HOME, TMPDIR, config dir) against this test's gateway.

    `run(prompt)`, `resume(prompt)`, `fork(prompt)`, `attempt(tool_use(...))`; then `.workspace`,
    `.effects` (what really changed on disk, and during which tool call), `.tool_calls` (each with the
    control plane's verdict), `.requests`, `.responses`, `.messages`, `.history`, `.result`.
    """
    from ..agents.networked import unavailable_here
    from ..session import AgentSession

    config = request.config
    try:
        run = _settings(request)
        template = run.workspace_template or agent_workspace_template
        policy = config.getoption("agent_inconclusive") or config.getini("agent_inconclusive") or "fail"
        agent = _as_asked(request, agent)
        trust = workspace_trust(config)
        if run.network and (why := unavailable_here()):  # never on the host's network instead
            pytest.skip(f"no world network can be made here: {why}")
        pool = warm_pool(request, agent, template, network=run.network, trust=trust)
        if pool is not None:
            session = AgentSession.create_warm(
                agent, pool, request.node.nodeid, scratch=tmp_path, plantings=_plantings(request),
                timeout=run.timeout, default_timeout=run.default_timeout, inconclusive_policy=policy,
            )  # fmt: skip
            if config.getoption("agent_warm_check") or config.getini("agent_warm_check"):
                from ..agents.warm import sampled

                session.warm_check = lambda variant: sampled(f"{request.node.nodeid}:{variant.id}")
            return session
        session = AgentSession.create(
            agent,
            tmp_path / "agent-world",
            request.node.nodeid,
            gateway=model_gateway,
            template=template,
            plantings=_plantings(request),
            timeout=run.timeout,
            default_timeout=run.default_timeout,
            inconclusive_policy=policy,
            trust=trust,
        )
        session.world.network.wanted = run.network
        _arm_hook_fault(request, session)
        return session
    except ControlPlaneError as error:
        _fail(error)


def _arm_hook_fault(request: pytest.FixtureRequest, session: Any) -> None:
    """`@pytest.mark.hook_fault("exit-1:1")`: the fault armed in the test's world until it ends (agents/hook_faults.py);
    a bad argument fails the test with the forms it takes."""
    marker = request.node.get_closest_marker("hook_fault")
    if marker is None:
        return
    import contextlib

    from ..agents.hook_faults import Fault, armed

    try:
        fault = Fault.parse(str(marker.args[0] if marker.args else marker.kwargs.get("fault", "")))
        stack = contextlib.ExitStack()
        stack.enter_context(armed(fault, session.world))
    except ValueError as error:
        raise ConfigError(f"@pytest.mark.hook_fault: {error}.", hint="Name a fault of a hook the settings hold, "
                          "e.g. @pytest.mark.hook_fault('exit-1:1').") from None  # fmt: skip
    request.addfinalizer(stack.close)
