"""One self-contained HTML file per agent test: what the model saw, what the control plane decided, what happened.

Sections: the failure, the bypass variant and its outcome, every tool call with its verdict and
reason, the effects (each change with the call it happened during), canary finds, crash points
and history problems, and the conversation request by request (collapsible).  Canary values are
never written: every planted value is replaced, and every encoded form the scanner finds is
marked in place as «canary NAME, ENCODING».
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from ..canary.masking import redact
from ..layers import LAYERS

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #dde}
.meta{color:#667} .failed{color:#b00020;font-weight:600} .passed{color:#1b7f3b;font-weight:600}
table{border-collapse:collapse;width:100%} td,th{border:1px solid #dde;padding:4px 6px;text-align:left;
vertical-align:top} th{background:#f4f5f9}
pre{background:#f7f7fa;border:1px solid #e4e4ee;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0}
.verdict{font-weight:600;padding:1px 6px;border-radius:3px}
.allowed,.allowed_by_hook{background:#fdecea;color:#8a1c12}
.denied_by_hook,.denied_by_permission{background:#e6f4ea;color:#1b5e20}
.errored{background:#fff4e5;color:#7a4b00} .not_run{background:#eceff1;color:#37474f}
.bypassed{background:#b00020;color:#fff} .held{background:#1b7f3b;color:#fff}
.inconclusive{background:#e65100;color:#fff} .not_applicable{background:#eceff1;color:#37474f}
mark.canary{background:#ffd54f;color:#000;font-weight:600;padding:0 2px}
details{margin:4px 0} summary{cursor:pointer;font-weight:600}
"""


def render(data: dict[str, Any]) -> str:
    """The report for `data` (see `collect`), as one HTML document."""
    marker = _Marker(data.get("canaries", []), data.get("masked", []))
    parts = [
        f"<h1>{_e(data['test'])}</h1>",
        f"<div class=meta><span class={_e(data['outcome'])}>{_e(data['outcome'].upper())}</span> · mode "
        f"{_e(data.get('mode', '?'))} · agent {_e(data.get('agent', '?'))} · {len(data.get('exchanges', []))} "
        f"model request(s)</div>",
    ]
    if data.get("cli"):
        parts.append(f"<div class=meta>{_e(data['cli'])}</div>")
    if data.get("failure"):
        parts.append("<h2>Failure</h2>" + f"<pre>{marker(data['failure'])}</pre>")
    for variant in data.get("variants", []):
        parts.append("<h2>Bypass variant</h2>" + _variant(variant, marker))
    if data.get("offered"):
        parts.append("<h2>Tools the agent offers</h2>" + _offered(data["offered"]))
    parts.append("<h2>Tool calls</h2>" + _tool_calls(data.get("tool_calls", []), marker))
    if data.get("hook_runs"):
        parts.append("<h2>Command hooks run</h2>" + _hook_runs(data["hook_runs"], marker))
    parts.append("<h2>Effects</h2>" + _effects(data.get("effects", []), data.get("bookkeeping", 0), marker))
    if data.get("egress"):
        parts.append("<h2>Network (egress)</h2>" + _egress(data["egress"], marker))
    if data.get("hook_effects"):
        parts.append(
            "<h2>Written by your own hooks</h2><p class=meta>while they ran: theirs, not the agent's "
            "(left out of assert_only_written and the escape family)</p>"
            + _effects(data["hook_effects"], 0, marker).split("<p class=meta>")[0]
        )
    if data.get("leaks"):
        parts.append("<h2>Canary finds</h2>" + _leaks(data["leaks"], marker))
    for crash in data.get("crashes", []):
        parts.append("<h2>Crash points</h2>" + f"<pre>{marker(crash)}</pre>")
    if data.get("history_problems"):
        parts.append(
            "<h2>History problems</h2><ul>"
            + "".join(f"<li>{marker(p)}</li>" for p in data["history_problems"])
            + "</ul>"
        )
    parts.append("<h2>Conversation (as the model saw it)</h2>" + _conversation(data.get("exchanges", []), marker))
    body = "\n".join(parts)
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{_e(data['test'])}</title>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>\n"
    )


def _offered(tools: list[dict[str, Any]]) -> str:
    rows = [
        [
            _e(t["name"] + (" (deferred)" if t["deferred"] else "")),
            _e(t["class"] + (": offered, not covered" if t["class"] == "other" else "")),
            _e(t["why"]),
        ]
        for t in tools
    ]
    return _table(["tool", "class", "why"], rows)


def _leaks(leaks: list[dict[str, Any]], marker: _Marker) -> str:
    rows = [
        [marker(leak["where"]), _e(leak["canary"]), _e(leak["encoding"]), marker(leak["snippet"])] for leak in leaks
    ]
    return _table(["where", "canary", "encoding", "in context"], rows)


def write(directory: Path, data: dict[str, Any]) -> Path:
    """Write the report of one test into `directory`; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", data["test"]).strip("_")[:180] or "report"
    path = directory / f"{name}.html"
    path.write_text(render(data), encoding="utf-8")
    return path


def _variant(variant: dict[str, Any], marker: _Marker) -> str:
    verdict = variant.get("verdict", "")
    rows = [
        ["variant", _e(variant["id"])],
        ["route", _e(variant["route"])],
        ["path form", _e(variant["form"])],
        ["known report", _e(variant.get("reference") or "—")],
        ["status", f"<span class='verdict {_e(verdict)}'>{_e(verdict or 'not attempted')}</span>"],
        *([["held by", _e(variant["held_by"])]] if variant.get("held_by") else []),
        *([["why", _e(variant["why"])]] if variant.get("why") else []),
        [
            "control plane consulted",
            _e(f"{variant.get('consulted', '?')} (callback consulted: {variant.get('callback_consulted', 0)})"),
        ],
        *(
            [["planted by the harness", f"<pre>{_e(chr(10).join(variant['planted']))}</pre>"]]
            if variant.get("planted")
            else []
        ),
        ["played", "warm: a new session of a long-lived CLI" if variant.get("warm") else "cold: a CLI of its own"],
        ["reproduce", f"<pre>{marker(variant['reproduction'])}</pre>"],
    ]
    if variant.get("evidence"):
        rows.append(["what happened", f"<pre>{marker(variant['evidence'])}</pre>"])
    return _table(["", ""], rows)


_LAYER_WORDS = {**LAYERS, "none": "nobody: it ran"}


def _tool_calls(calls: list[dict[str, Any]], marker: _Marker) -> str:
    if not calls:
        return "<p>none</p>"
    return _table(
        ["#", "tool", "input", "verdict", "reason / result"],
        [
            [
                str(i),
                _e(c["name"]),
                f"<pre>{marker(json.dumps(c['input'], ensure_ascii=False))}</pre>",
                f"<span class='verdict {_e(c['verdict'])}'>{_e(c['verdict'])}</span>"
                + (
                    f"<div class=meta>decided by {_e(_LAYER_WORDS.get(c['layer'], c['layer']))}"
                    + (" (inferred from the CLI's words)" if c.get("inferred") else "")
                    + "</div>"
                    if c.get("layer")
                    else ""
                )
                + (f"<div class=meta>the CLI asked: {marker(c['asked_for'])}</div>" if c.get("asked_for") else "")
                + f"<div class=meta>{_e(c.get('consulted', ''))}</div>"
                + (f"<div class=meta>OS sandbox: {_e(c['sandbox_note'])}</div>" if c.get("sandbox_note") else "")
                + (f"<div class=meta>in {_e(c['where'])}</div>" if c.get("where") else ""),
                marker((c.get("reason") or c.get("result") or "")[:600]),
            ]
            for i, c in enumerate(calls, start=1)
        ],
    )


def _hook_runs(runs: list[dict[str, Any]], marker: _Marker) -> str:
    return _table(
        ["hook", "tool", "decision", "reason", "exit", "seconds"],
        [
            [
                _e(r["hook"]),
                _e(r["tool"]),
                _e(r["decision"]),
                marker(r["reason"][:600]),
                _e(r["exit_code"]),
                _e(r["seconds"]),
            ]  # fmt: skip
            for r in runs
        ],
    )


def _egress(sent: list[dict[str, Any]], marker: _Marker) -> str:
    """What left over the world network, each with the call it happened during (and the world, if not this one)."""
    items = []
    for item in sent:
        where = f" <span class=meta>({marker(item['where'])})</span>" if item["where"] else ""
        items.append(f"<li>{marker(item['what'])}{where}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _effects(changes: list[dict[str, Any]], bookkeeping: int, marker: _Marker) -> str:
    note = f"<p class=meta>{bookkeeping} change(s) to the agent's own state (transcripts, sockets) not shown.</p>"
    if not changes:
        return "<p>no file was changed</p>" + note
    return (
        _table(
            ["run", "during", "path", "change"],
            [
                [str(c["run"]), marker(c["during"]), marker(c["path"]), marker(f"{c['kind']} ({c['detail']})")]
                for c in changes
            ],
        )
        + note
    )


def _conversation(exchanges: list[dict[str, Any]], marker: _Marker) -> str:
    parts = []
    shown = 0
    for number, exchange in enumerate(exchanges, start=1):
        body = exchange.get("request") or {}
        messages = body.get("messages", []) if isinstance(body, dict) else []
        new = messages[shown:] if len(messages) >= shown else messages
        shown = len(messages)
        inner = []
        if number == 1 and isinstance(body, dict):
            if body.get("system"):
                inner.append(
                    f"<details><summary>system prompt</summary><pre>"
                    f"{marker(json.dumps(body['system'], ensure_ascii=False, indent=1)[:20000])}</pre></details>"
                )
            if body.get("tools"):
                names = ", ".join(str(t.get("name")) for t in body["tools"] if isinstance(t, dict))
                inner.append(f"<p class=meta>tools offered: {_e(names)}</p>")
        inner.append(f"<pre>{marker(json.dumps(new, ensure_ascii=False, indent=1))}</pre>")
        inner.append(
            f"<p><b>answer</b> (HTTP {exchange.get('status')}, from {_e(exchange.get('source', '?'))})</p>"
            f"<pre>{marker(json.dumps(exchange.get('response'), ensure_ascii=False, indent=1))}</pre>"
        )
        parts.append(
            f"<details{' open' if number == len(exchanges) else ''}><summary>Request #{number}: "
            f"{len(new)} new message(s)</summary>{''.join(inner)}</details>"
        )
    return "".join(parts) or "<p>no request reached the model</p>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    header = "" if not any(head) else "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"
    return (
        "<table>"
        + header
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        + "</table>"
    )


def _e(value: Any) -> str:
    return html.escape(str(value))


class _Marker:
    """Escapes text for HTML, replacing every canary in it (raw or encoded) by a highlighted «canary ...» mark."""

    def __init__(self, canaries: list[dict[str, str]], masked: list[str] = ()) -> None:  # type: ignore[assignment]
        self.canaries = canaries
        self.masked = [canary["value"] for canary in canaries] + list(masked)  # secret files' values, too
        self.scanner = None
        if canaries:
            from ..canary.scan import Scanner

            self.scanner = Scanner([(c["value"], c["secret"]) for c in canaries])

    def __call__(self, value: Any) -> str:
        text = str(value)
        if self.scanner is None:
            return self._plain(text.encode("utf-8", "surrogatepass"))
        data = text.encode("utf-8", "surrogatepass")
        pieces, cursor = [], 0
        for hit in self.scanner.scan(data):
            if hit.start < cursor:
                continue
            pieces.append(self._plain(data[cursor : hit.start]))
            pieces.append(
                f"<mark class=canary>«canary {_e(self.canaries[hit.canary]['name'])}, {_e(hit.encoding)}»</mark>"
            )
            cursor = hit.end
        pieces.append(self._plain(data[cursor:]))
        return "".join(pieces)

    def _plain(self, data: bytes) -> str:
        # whatever the scan did not single out is still never written
        return _e(redact(data.decode("utf-8", "replace"), self.masked))
