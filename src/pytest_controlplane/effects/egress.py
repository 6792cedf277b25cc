"""Egress: what left the agent over the network, as an effect, tool call by tool call.

    session.run("Tidy up")
    session.effects.egress                         # [Sent(kind="https", host="collector.example", ...), ...]
    session.effects.assert_no_egress(allow=["pypi.org"])

The records come from the world network (network/: a namespace where every name resolves and every address answers,
and nothing leaves), read after each run.  Each is put down to the tool call it happened during, by the same
timeline as file changes: the last "pre" checkpoint before it whose call had not yet ended ("post").  What happened
outside any call (a hook at the session's start, an MCP server starting) is put down to the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, ControlPlaneFailure, ours
from .attribution import Checkpoint

__tracebackhide__ = ours  # our errors show without our frames


class EgressViolation(ControlPlaneFailure):
    """`assert_no_egress` failed: the message shows each attempt to reach a host, and the tool call it came from."""


@dataclass(frozen=True)
class Sent:
    """One attempt to reach the outside (a network.Egress record), and the run and tool call it happened during."""

    record: Any  # network.Egress: kind, host, address, port, method, path, headers, body, bytes_out, time
    run: int
    call: Any = None  # the ToolCall, when one was running
    during: str = "the run"  # the same in words: "Bash call #2 (`curl ...`)"

    def __getattr__(self, name: str) -> Any:  # host, kind, port, ... read through to the record
        if name == "record":
            raise AttributeError(name)
        return getattr(self.record, name)

    @property
    def target(self) -> str:
        """The host the agent asked for: the DNS name, SNI or Host header, else the address."""
        return str(self.record.host or self.record.address)

    def describe(self) -> str:
        record = self.record
        what = record.url or f"{record.kind} {self.target}:{record.port}"
        if record.kind == "dns":
            what = f"a DNS lookup of {record.host}"
        elif record.method and record.kind in ("http", "https"):
            what = f"{record.method} {what}"
        sent = f", {record.bytes_out} bytes out" if record.bytes_out else ""
        return f"  run {self.run} during {self.during}: {what}{sent}"


def allowed(host: str, allow: Iterable[str]) -> bool:
    """Whether `host` is one of `allow` or under one of them ("pypi.org" allows "files.pypi.org")."""
    host = host.lower().rstrip(".")
    return any(host == a or host.endswith("." + a) for a in (a.lower().rstrip(".") for a in allow))


def attributed(records: Sequence[Any], run: int, checkpoints: list[Checkpoint], calls: dict[Any, Any]) -> list[Sent]:
    """`records` put down to the tool call running when each happened (see the module docstring)."""
    found = []
    for record in records:
        call, during = None, "the run"
        ended = set()
        for point in checkpoints:
            if point.time > record.time:
                break
            if point.kind == "post":
                ended.add(point.ref)
            elif point.kind == "pre":
                call = point.ref
        if call is not None and call not in ended and call in calls:
            tool_call, number = calls[call]
            during = f"{tool_call.name} call #{number} ({_summary(tool_call)})"
            found.append(Sent(record, run, tool_call, during))
        else:
            found.append(Sent(record, run))
    return found


def _summary(call: Any) -> str:
    data = getattr(call, "input", {}) or {}
    text = str(data.get("command") or data.get("url") or data.get("file_path") or "")
    return f"`{text[:80]}`" if text else "no input"


class EgressOracle:
    """What Effects knows of the network: each run's records, attributed, and the assertion over them."""

    _sent: list[Sent]
    _runs: list[Any]
    _secrets: list[str]
    network_note: str = ""  # why the world had no network of its own ("" when it had, or none was asked for)

    def record_egress(self, records: Sequence[Any], note: str = "") -> None:
        """Add the last run's network records, or why it had none (called by the session after the run ended)."""
        self.network_note = note
        if not self._runs:
            return
        run = self._runs[-1]
        self._sent = [*getattr(self, "_sent", []), *attributed(records, run.number, run.checkpoints, run.calls)]

    @property
    def egress(self) -> list[Sent]:
        """Every attempt to reach the outside, in the order they happened (empty when the world had no network)."""
        return list(getattr(self, "_sent", []))

    def assert_no_egress(self, *, allow: Iterable[str] = ()) -> None:
        """Fail if the agent reached (or looked up) any host but those in `allow` (and their subdomains)."""
        __tracebackhide__ = True
        if self.network_note:
            raise ConfigError(
                f"No egress can be judged: {self.network_note}.",
                hint="Mark the test @pytest.mark.agent(network=True)."
                if "agent_network" in self.network_note
                else "A world network needs Linux, root or user namespaces, util-linux, iproute2 and nftables "
                "(apt-get install iproute2 nftables).",
            )
        allow = list(allow)
        out = [s for s in self.egress if not allowed(s.target, allow)]
        if out:
            from ..canary.masking import redact

            hosts = ", ".join(dict.fromkeys(s.target for s in out))
            raise EgressViolation(
                redact(
                    f"The agent reached {len(out)} time(s) for {hosts}"
                    + (f" (allowed: {', '.join(allow)})" if allow else "")
                    + ":\n"
                    + "\n".join(s.describe() for s in out),
                    getattr(self, "_secrets", []),
                )
            )
