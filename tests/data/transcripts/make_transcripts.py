#!/usr/bin/env python
"""Make the stored Claude Code transcripts in this folder (run by hand, never in CI).

    python tests/data/transcripts/make_transcripts.py --cli PATH --version 2.1.114 --out tests/data/transcripts

PATH is the CLI of one `@anthropic-ai/claude-code` release from npm: `.../claude-code/cli.js` (run with node;
1.x and 2.0.x) or the native binary (`.../claude-code-linux-x64/claude`; 2.1.x ships one instead of cli.js).
The model is pytest-controlplane's scripted model (not Claude): one function of the request answers every
request the CLI sends — the main conversation (steered by a `[step:NAME]` marker in the prompt), its
subagents (a `[subtask:NAME]` marker in the prompt the model gave the Task/Agent tool), compaction summary
requests, warm-ups and title requests.  Each scenario runs in a World of its own, offline; its transcripts
are copied out with the world's directory replaced by /tmp/controlplane-world (slug -tmp-controlplane-world).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_controlplane import CommandAgent, ModelGateway, ScriptedModel, World, text, tool_use
from pytest_controlplane.session import AgentSession

STEP = re.compile(r"\[step:([a-z0-9-]+)\]")
SUBTASK = re.compile(r"\[subtask:([a-z0-9-]+)\]")
PLACEHOLDER = "/tmp/controlplane-world"
SCENARIOS = ("basic", "hooks", "attachments", "subagent", "compact", "fork", "hooks-race")


def slug(path: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", path)


def texts(message: dict[str, Any]) -> str:
    """The text blocks of a message (tool results left out), joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or [] if isinstance(b, dict))


class Model:
    """The scripted model: a function of the request, so that it answers side requests too."""

    def __init__(self, plans: dict[str, list[Callable[[set[str], dict], Any]]], log: list[str]) -> None:
        self.plans = plans
        self.log = log

    def __call__(self, request: Any) -> Any:
        body = request.json if isinstance(request.json, dict) else {}
        messages = request.messages
        tools = {t.get("name"): t for t in body.get("tools", []) if isinstance(t, dict)}
        system = system_text(body)
        last = texts(messages[-1]) if messages else ""
        kind, answer = self.decide(messages, tools, system, last)
        self.log.append(json.dumps({"i": request.index, "kind": kind, "model": body.get("model"),
                                    "n_messages": len(messages), "tools": sorted(tools),
                                    "system": system[:160], "last_user": last[:200],
                                    "answer": [b.type + ":" + (b.name or b.text[:40]) for b in
                                               (answer if isinstance(answer, list) else [answer])]}))
        return answer

    def decide(self, messages: list[dict], tools: dict, system: str, last: str) -> tuple[str, Any]:
        blocks = messages[-1].get("content") if messages else None
        last_texts = [blocks] if isinstance(blocks, str) else [b.get("text", "") for b in blocks or []
                                                              if isinstance(b, dict) and b.get("type") == "text"]
        if any(t.strip() == "Warmup" for t in last_texts):  # 2.0.x warms its subagents up
            return "warmup", text("Ready.")
        # Side requests of 1.0.x/2.0.x (sent even with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1).
        if "Please write a 5-10 word title" in last or "Summarize this coding conversation" in system:
            return "title", text("Scripted session")
        if "Bash command prefix detection" in last or "process Bash commands" in system:
            return "bash-prefix", text("none")
        if "Extract any file paths" in system:
            return "file-paths", text("<filepaths>\n</filepaths>")
        lowered = last.lower()
        if "summary" in lowered and ("conversation" in lowered or "compact" in lowered):
            return "compact", text("<analysis>The user ran a few scripted steps.</analysis>\n<summary>\n1. Primary "
                                   "Request and Intent: the user asked to run scripted steps.\n2. Pending Tasks: "
                                   "none.\n</summary>")
        if "isNewTopic" in system:
            return "topic", text('{"isNewTopic": false, "title": null}')
        for index, message in enumerate(messages):
            found = SUBTASK.search(texts(message)) if message.get("role") == "user" else None
            if found:
                done = sum(1 for m in messages[index + 1:] if m.get("role") == "assistant")
                return f"subagent:{found.group(1)}:{done}", self.turn(f"sub-{found.group(1)}", done, tools)
        marked = None
        for index, message in enumerate(messages):
            if message.get("role") == "user":
                found = STEP.findall(texts(message))
                if found:
                    marked = (index, found[-1])
        if marked is None:
            if "title" in system.lower():
                return "title", text('{"title": "Scripted session"}')
            return "other", text("OK.")
        index, step = marked
        done = sum(1 for m in messages[index + 1:] if m.get("role") == "assistant")
        return f"main:{step}:{done}", self.turn(step, done, tools)

    def turn(self, step: str, done: int, tools: dict) -> Any:
        plan = self.plans.get(step, [])
        if done >= len(plan):
            return text("Done.")
        return plan[done](tools)


def agent_tool(tools: dict) -> str:
    return "Agent" if "Agent" in tools else "Task"


def agent_call(tools: dict, name: str, task: str) -> Any:
    schema = tools.get(agent_tool(tools), {}).get("input_schema", {}).get("properties", {})
    call = {"description": f"Subagent {name}", "prompt": f"[subtask:{name}] {task}"}
    if "subagent_type" in schema:
        call["subagent_type"] = "general-purpose"
    return tool_use(agent_tool(tools), call)


def todo_call(tools: dict) -> Any:
    schema = tools.get("TodoWrite", {}).get("input_schema", {})
    item_props = schema.get("properties", {}).get("todos", {}).get("items", {}).get("properties", {})
    items = []
    for number, (content, status) in enumerate([("Read the notes", "completed"), ("Check the data", "in_progress"),
                                                 ("Report back", "pending")], start=1):
        item = {"content": content, "status": status, "activeForm": content.replace("Read", "Reading")
                .replace("Check", "Checking").replace("Report", "Reporting"), "id": str(number), "priority": "medium"}
        items.append({k: v for k, v in item.items() if k in item_props} if item_props else item)
    return tool_use("TodoWrite", {"todos": items})


def plans(workspace: Path) -> dict[str, list[Callable[[dict], Any]]]:
    ws = str(workspace)
    return {
        # 1. ordinary tool use, then a resume
        "basic-1": [
            lambda t: tool_use("Write", {"file_path": f"{ws}/notes.txt", "content": "hello from the scripted model\n"}),
            lambda t: tool_use("Bash", {"command": "ls && cat notes.txt", "description": "List and show"}),
            lambda t: [tool_use("Read", {"file_path": f"{ws}/notes.txt"}),
                       tool_use("Bash", {"command": "echo parallel", "description": "Echo"})],
            lambda t: text("All done: notes.txt written and read."),
        ],
        "basic-2": [
            lambda t: tool_use("Read", {"file_path": f"{ws}/notes.txt"}),
            lambda t: text("The notes are still there."),
        ],
        # 2. hooks (settings in workspace/.claude/settings.json)
        "hooks-1": [
            lambda t: tool_use("Bash", {"command": "echo hooked", "description": "Echo"}),
            lambda t: [tool_use("Bash", {"command": "echo one", "description": "Echo one"}),
                       tool_use("Bash", {"command": "echo two", "description": "Echo two"})],
            lambda t: text("Hooks ran."),
        ],
        "hooks-2": [
            lambda t: tool_use("Write", {"file_path": f"{ws}/after.txt", "content": "after resume\n"}),
            lambda t: text("Hooks ran again."),
        ],
        # 2b. hooks racing: several hooks per event (one slow), three parallel calls, a subagent under hooks
        "race-1": [
            lambda t: [tool_use("Bash", {"command": f"echo {n}", "description": f"Echo {n}"}) for n in ("x", "y", "z")],
            lambda t: agent_call(t, "c", "Run echo from-c and report."),
            lambda t: text("Raced."),
        ],
        "sub-c": [
            lambda t: [tool_use("Bash", {"command": "echo from-c", "description": "Echo"}),
                       tool_use("Read", {"file_path": f"{ws}/notes.txt"})],
            lambda t: text("Subagent c: done."),
        ],
        "race-2": [
            lambda t: tool_use("Bash", {"command": "echo again", "description": "Echo"}),
            lambda t: text("Raced again."),
        ],
        # 3. attachments: @-mention, CLAUDE.md, todo list, a file edited outside between turns
        "att-1": [
            lambda t: tool_use("Read", {"file_path": f"{ws}/notes.txt"}),
            # changed behind the Read tool's back: the next request carries the change
            lambda t: tool_use("Bash", {"command": "echo appended by bash >> notes.txt", "description": "Append"}),
            lambda t: todo_call(t),
            lambda t: text("Noted, with a todo list."),
        ],
        "att-2": [
            lambda t: tool_use("Bash", {"command": "cat notes.txt data.txt", "description": "Show files"}),
            lambda t: text("Seen the change."),
        ],
        # 4. subagents, two in parallel
        "sub-1": [
            lambda t: [agent_call(t, "a", "Run echo from-a and report."),
                       agent_call(t, "b", "Read notes.txt and report.")],
            lambda t: text("Both subagents reported."),
        ],
        "sub-a": [
            lambda t: tool_use("Bash", {"command": "echo from-a", "description": "Echo"}),
            lambda t: text("Subagent a: printed from-a."),
        ],
        "sub-b": [
            lambda t: tool_use("Read", {"file_path": f"{ws}/notes.txt"}),
            lambda t: text("Subagent b: notes read."),
        ],
        "sub-2": [
            lambda t: tool_use("Bash", {"command": "echo after subagents", "description": "Echo"}),
            lambda t: text("Resumed after the subagents."),
        ],
        # 5. compaction (/compact between two prompts)
        "cmp-1": [
            lambda t: tool_use("Bash", {"command": "echo before compaction", "description": "Echo"}),
            lambda t: text("Before compaction."),
        ],
        "cmp-2": [
            lambda t: tool_use("Bash", {"command": "echo after compaction", "description": "Echo"}),
            lambda t: text("After compaction."),
        ],
        # 6. rewind (--resume-session-at) and fork (--fork-session)
        "fork-1": [
            lambda t: tool_use("Write", {"file_path": f"{ws}/fork.txt", "content": "first\n"}),
            lambda t: text("Wrote fork.txt."),
        ],
        "fork-2": [
            lambda t: tool_use("Bash", {"command": "echo second turn", "description": "Echo"}),
            lambda t: text("Second turn."),
        ],
        "fork-3": [
            lambda t: tool_use("Bash", {"command": "echo rewound", "description": "Echo"}),
            lambda t: text("Continued from the rewind point."),
        ],
        "fork-4": [
            lambda t: tool_use("Bash", {"command": "echo forked", "description": "Echo"}),
            lambda t: text("Forked."),
        ],
    }


HOOKS = {
    "SessionStart": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": "
                                 "\"SessionStart\", \"additionalContext\": \"SessionStart hook context.\"}}'"}]}],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'UserPromptSubmit hook context.'"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": (
        "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", "
        "\"permissionDecisionReason\": \"pre hook allows\", \"additionalContext\": \"PreToolUse hook context.\"}, "
        "\"systemMessage\": \"PreToolUse hook message.\"}'")}]}],
    "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": (
        "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": "
        "\"PostToolUse hook context.\"}}'")}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "echo stop hook ran"}]}],
}


def _context_hook(event: str, words: str, sleep: float = 0.0) -> dict[str, str]:
    output = json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": words}})
    return {"type": "command", "command": (f"sleep {sleep}; " if sleep else "") + f"echo '{output}'"}


RACING_HOOKS = {
    event: [{**({"matcher": "*"} if event in ("PreToolUse", "PostToolUse") else {}),
             "hooks": [_context_hook(event, f"{event} fast hook."), _context_hook(event, f"{event} slow hook.", 0.05)]}]
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse")
}
RACING_HOOKS["SubagentStop"] = [{"hooks": [{"type": "command", "command": "echo subagent stop hook ran"}]}]
RACING_HOOKS["Stop"] = [{"hooks": [{"type": "command", "command": "echo stop hook ran"}]}]


class Run:
    """One scenario: a World, a gateway with the scripted model, the CLI as a CommandAgent."""

    def __init__(self, cli: str, base: Path, scenario: str, log: list[str], version: str) -> None:
        self.world = World.create(base / "world", f"transcripts-{scenario}")
        self.extra: list[str] = []
        self.log = log
        command = ["node", cli] if cli.endswith((".js", ".mjs", ".cjs")) else [cli]

        def argv(session_id: str, resume: str | None, fork: bool) -> list[str]:
            args = command + ["-p", "--permission-mode", "bypassPermissions"]
            if resume:
                # 1.0.x refuses --session-id with --resume: its fork gets an id of its own.
                pinned = ["--session-id", session_id] if not version.startswith("1.") else []
                args += ["--resume", resume] + (["--fork-session", *pinned] if fork else [])
            else:
                args += ["--session-id", session_id]
            return args + self.extra

        self.agent = CommandAgent(argv, env={"IS_SANDBOX": "1"})
        self.model = Model(plans(self.world.workspace), log)

    def __enter__(self) -> Run:
        self.gateway = ModelGateway(script=ScriptedModel(self.model)).__enter__()
        self.session = AgentSession(self.agent, self.world, self.gateway, timeout=180)
        return self

    def __exit__(self, *exc: object) -> None:
        self.gateway.close(save=False)

    def prompt(self, words: str, *, resume: bool = False, fork: bool = False, extra: list[str] | None = None) -> Any:
        self.extra = list(extra or [])
        self.log.append(f"--- prompt {words!r} resume={resume} fork={fork} extra={self.extra}")
        started = time.time()
        try:
            if fork:
                outcome = self.session.fork(words)
            elif resume:
                outcome = self.session.resume(words, session=self.world.session_id)
            else:
                outcome = self.session.run(words)
        except Exception as error:  # noqa: BLE001 - a version that cannot do it: keep going, say so
            self.log.append(f"!!! failed: {type(error).__name__}: {str(error)[:600]}")
            return None
        self.log.append(f"--- done in {time.time() - started:.1f}s: {outcome.result[:200]!r}")
        return outcome

    def projects(self) -> Path:
        return self.world.config_dir / "projects"

    def main_lines(self) -> list[dict[str, Any]]:
        path = next(self.projects().rglob(f"{self.world.session_id}.jsonl"))
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scrub(data: str, root: Path) -> str:
    spellings = {str(root), os.path.realpath(root)}
    for spelling in sorted(spellings, key=len, reverse=True):
        data = data.replace(spelling, PLACEHOLDER)
    for spelling in sorted(spellings, key=len, reverse=True):
        data = data.replace(slug(spelling), slug(PLACEHOLDER))
    return data


def copy_out(run: Run, version: str, scenario: str, out: Path) -> list[Path]:
    """The session files of the run, renamed: the main session, forks, subagent sidechains."""
    main_id = run.world.session_id
    files = sorted(run.projects().rglob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, str(p)))
    written = []
    subagents = forks = summaries = 0
    for path in files:
        first = next((json.loads(line) for line in path.read_text().splitlines() if line.strip()), {})
        if not first:
            run.log.append(f"=== {path.relative_to(run.projects())} is empty: skipped")
            continue
        if all(json.loads(line).get("type") == "summary" for line in path.read_text().splitlines() if line.strip()):
            # 1.0.x writes the title of a resumed session into a file of its own (the run's new id)
            summaries += 1
            if scenario != "basic":
                run.log.append(f"=== {path.relative_to(run.projects())} holds only summary lines: skipped")
                continue
            name = f"claude-code-{version}-{scenario}-summaries{'' if summaries == 1 else summaries}.jsonl"
            (out / name).write_text(scrub(path.read_text(encoding="utf-8"), run.world.root), encoding="utf-8")
            run.log.append(f"=== {path.relative_to(run.projects())} -> {name}")
            written.append(out / name)
            continue
        if first.get("isSidechain") and texts(first.get("message") or {}).strip() == "Warmup":
            run.log.append(f"=== {path.relative_to(run.projects())} is a warm-up sidechain: skipped")
            continue
        if path.stem == main_id:
            name = f"claude-code-{version}-{scenario}.jsonl"
        elif path.name.startswith("agent-") or "subagents" in path.parts or first.get("isSidechain"):
            subagents += 1
            name = f"claude-code-{version}-{scenario}-subagent-{subagents}.jsonl"
        else:
            forks += 1
            name = f"claude-code-{version}-{scenario}-fork{'' if forks == 1 else forks}.jsonl"
        target = out / name
        target.write_text(scrub(path.read_text(encoding="utf-8"), run.world.root), encoding="utf-8")
        run.log.append(f"=== {path.relative_to(run.projects())} -> {name}")
        written.append(target)
    return written


def scenario(name: str, cli: str, version: str, out: Path, base: Path, log: list[str]) -> list[Path]:
    log.append(f"##### {name}")
    with Run(cli, base / name, name, log, version) as run:
        ws = run.world.workspace
        if name == "basic":
            run.prompt("[step:basic-1] Write notes.txt, then look at it.")
            run.prompt("[step:basic-2] Is it still there?", resume=True)
        elif name == "hooks":
            (ws / ".claude").mkdir()
            (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": HOOKS}, indent=2))
            run.prompt("[step:hooks-1] Run some commands.")
            run.prompt("[step:hooks-2] One more, please.", resume=True)
        elif name == "hooks-race":
            (ws / ".claude").mkdir()
            (ws / ".claude" / "settings.json").write_text(json.dumps({"hooks": RACING_HOOKS}, indent=2))
            (ws / "notes.txt").write_text("notes for the racing hooks\n")
            run.prompt("[step:race-1] Race the hooks; see @notes.txt.")
            run.prompt("[step:race-2] Once more.", resume=True)
        elif name == "attachments":
            (ws / "CLAUDE.md").write_text("# Project memory\nAlways answer briefly.\n")
            (ws / "notes.txt").write_text("first version of the notes\n")
            (ws / "data.txt").write_text("some data\n")
            run.prompt("[step:att-1] Look at @notes.txt and plan the work.")
            time.sleep(1.1)
            (ws / "notes.txt").write_text("second version of the notes, edited outside\n")
            run.prompt("[step:att-2] I changed notes.txt; also see @data.txt.", resume=True)
        elif name == "subagent":
            (ws / "notes.txt").write_text("notes for the subagent\n")
            run.prompt("[step:sub-1] Ask two subagents to help.")
            run.prompt("[step:sub-2] And now?", resume=True)
        elif name == "compact":
            run.prompt("[step:cmp-1] Echo something.")
            run.prompt("/compact", resume=True)
            run.prompt("[step:cmp-2] Echo again after the compaction.", resume=True)
        elif name == "fork":
            run.prompt("[step:fork-1] Write fork.txt.")
            # --resume-session-at takes the entry uuid in 2.x, the API message id in 1.0.x.
            last = next((e for e in reversed(run.main_lines()) if e.get("type") == "assistant"), {})
            first_run_last = last.get("message", {}).get("id") if version.startswith("1.") else last.get("uuid")
            run.prompt("[step:fork-2] A second turn.", resume=True)
            log.append(f"--- rewind to {first_run_last}")
            run.prompt("[step:fork-3] Continue from the end of the first turn.", resume=True,
                       extra=["--resume-session-at", first_run_last] if first_run_last else [])
            run.prompt("[step:fork-4] A fork of the session.", fork=True)
        return copy_out(run, version, name, out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", required=True, help="cli.js of @anthropic-ai/claude-code, or its native binary")
    parser.add_argument("--version", required=True, help="the CLI's version, used in the file names")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="only these (default: all)")
    parser.add_argument("--log", type=Path, help="where to write the request log (default: stderr)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    base = Path(tempfile.mkdtemp(prefix=f"cc-{args.version}-"))
    try:
        for name in args.scenario or SCENARIOS:
            for path in scenario(name, os.path.abspath(args.cli), args.version, args.out, base, log):
                print(f"{path} {path.stat().st_size} bytes")
    finally:
        report = "\n".join(log) + "\n"
        if args.log:
            args.log.write_text(report)
        else:
            sys.stderr.write(report)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
