"""The `controlplane` command: the gateway from a shell, and cassette housekeeping for CI.

    controlplane serve --mode replay --cassette cassettes/x/test_y.yaml
    controlplane serve --script examples/claude_guard/model_script.py:MODEL   # a scripted stand-in API
    controlplane cassettes check [cassettes/] [--json]    # loads? answers sound? scrubbed? secrets? one CLI version?
    controlplane cassettes stats [cassettes/] [--json]
    controlplane cassettes prune [cassettes/] [--yes]     # cassettes no collected test uses
    controlplane audit [DIR] [--quick] [--target T] ...   # the route x mode matrix of DIR's agent (--help)
    controlplane audit DIR --quick --fix                  # and the settings change it proves: fix.patch
    controlplane audit DIR --quick --coverage             # and each hook and rule removed in turn: what flips
    controlplane audit merge A.json B.json [--json OUT] [--html OUT] [--sarif OUT] [--summary-md OUT] [--target .env]
    controlplane secret-id [VALUE]                        # the mask reports show here for VALUE (stdin without one)
    controlplane cli install VERSION                      # a Claude Code release from the npm registry, cached once
    controlplane cli list                                 # the cached releases, the bundled CLI, which is the default

Exit codes: 0 fine, 1 findings (check, an audit's holes) or files to prune (prune without --yes), 2 usage errors;
`controlplane audit PATH` exits as pytest does.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .errors import ControlPlaneError


def serve(args: argparse.Namespace) -> int:
    from .gateway import ModelGateway
    from .gateway.stand_in import StandIn

    gateway = (
        StandIn(args.script).gateway
        if args.script
        else ModelGateway(
            mode=args.mode,
            cassette=args.cassette,
            upstream=args.upstream,
            replay_advice="serve a cassette with `controlplane serve --mode replay --cassette PATH`",
        )
    )
    stopped = threading.Event()
    # Ctrl-C, `kill` and a CI runner's stop all end it the same way, with the cassette saved; set here, not inherited
    # (a shell's background job starts with SIGINT ignored, and SIGTERM would end it without saving).
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stopped.set())
    gateway.open()
    print(f"ANTHROPIC_BASE_URL={gateway.base_url}", flush=True)
    try:
        stopped.wait()
    finally:
        gateway.close(save=True)
        for problem in gateway.problems:
            print(f"controlplane serve: {type(problem).__name__}: {problem}", file=sys.stderr)
    return 1 if gateway.problems else 0


def cassettes(args: argparse.Namespace) -> int:
    import json

    from .cassette import audit

    paths = args.paths or ["cassettes"]
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        print(f"controlplane cassettes: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.action == "check":
        findings = audit.check(paths)
        if args.json:
            print(json.dumps({"findings": findings}, indent=1))
        else:
            for finding in findings:
                print(f"{finding['file']}: {finding['problem']}: {finding['detail']}")
                if finding.get("fix"):
                    print(f"  fix: {finding['fix']}")
            print(f"{len(audit.cassette_files(paths))} cassette(s) checked, {len(findings)} finding(s)")
        return 1 if findings else 0
    if args.action == "stats":
        numbers = audit.stats(paths)
        if args.json:
            print(json.dumps(numbers, indent=1))
        else:
            print(
                f"{numbers['files']} cassette(s), {numbers['interactions']} interaction(s), "
                f"{numbers['bytes'] / 1e6:.1f} MB"
            )
            for key in ("models", "cli_versions", "sources"):
                print(f"{key}: " + ", ".join(f"{k} ({v})" for k, v in sorted(numbers[key].items())))
        return 0
    if len(paths) != 1 or not Path(paths[0]).is_dir():
        print("controlplane cassettes prune takes one cassette directory", file=sys.stderr)
        return 2
    stale = audit.unused(audit.cassette_files(paths), audit.collected(paths[0], args.tests))
    if args.json:
        print(json.dumps({"unused": [str(p) for p in stale], "deleted": bool(args.yes)}, indent=1))
    for path in stale:
        if args.yes:
            path.unlink()
        if not args.json:
            print(f"{'deleted' if args.yes else 'unused'}: {path}")
    if not args.json:
        print(
            f"{len(stale)} cassette(s) no collected test uses"
            + ("" if args.yes or not stale else " — run again with --yes to delete them")
        )
    return 1 if stale and not args.yes else 0


def claude_clis(args: argparse.Namespace) -> int:
    """`controlplane cli install VERSION|latest` and `controlplane cli list` (clis/)."""
    import time

    from .clis import cache

    if args.action == "install":
        started = time.monotonic()
        found, fresh = cache.install(args.version, announce=lambda line: print(line, flush=True))
        if fresh:
            print(f"installed Claude Code {found.version} at {found.path} in {time.monotonic() - started:.0f} s "
                  "(its sha512 checked against the npm registry's)")  # fmt: skip
        else:
            print(f"Claude Code {found.version} is already installed at {found.path}: nothing to do")
        return 0
    for line in _cli_lines():
        print(line)
    return 0


def _cli_lines() -> list[str]:
    """What `controlplane cli list` prints: the bundled CLI, `claude` on PATH, the cached releases, the default."""
    import importlib.metadata
    import shutil

    from .clis import cache, choice

    try:
        default = choice.default().path
    except ControlPlaneError:
        default = ""
    mark = {True: "  (the default)", False: ""}
    try:
        bundled = choice.bundled()
        from claude_agent_sdk._cli_version import __cli_version__

        sdk = importlib.metadata.version("claude-agent-sdk")
        lines = [f"bundled  {__cli_version__}  {bundled}  (claude-agent-sdk {sdk}){mark[bundled == default]}"]
    except ControlPlaneError as error:
        lines = [f"bundled  none: {' '.join(str(error).split())}"]
    system = shutil.which("claude")
    lines.append(f"system   {system}{mark[system == default]}" if system else "system   no `claude` on PATH")
    releases = cache.every()
    lines.append(f"cached in {cache.root()}:" if releases else f"cached   none in {cache.root()}")
    for release in releases:
        source = release.source
        lines.append(
            f"  {release.version}  {release.path.stat().st_size / 1e6:.1f} MB  {release.path}  from "
            f"{source.get('tarball')} (sha512 checked, installed {source.get('installed_at')})"
        )
    return lines + ["choose one for a run: pytest --agent-cli VERSION|PATH|bundled|system; install: controlplane cli "
                    "install VERSION"]  # fmt: skip


def audit(argv: list[str]) -> int:
    """`controlplane audit [PATH] [PYTEST ARGS]` runs the audit in pytest; `controlplane audit merge` joins shards."""
    if argv[:1] != ["merge"]:
        from .audit.command import after_audit, pytest_args

        after = after_audit(argv, Path.cwd())  # a bad --fix is a usage error before the audit, not after it
        code = subprocess.call([sys.executable, "-m", "pytest", *pytest_args(argv, Path.cwd())])
        if after is None:
            return code
        from .audit.after import run

        return run(after, code=code)
    from .audit import Matrix, dump, load, merge, page, sarif, summary

    parser = argparse.ArgumentParser(prog="controlplane audit merge", description="join the shards of one audit")
    parser.add_argument("shards", nargs="+", help="the --agent-audit-json files of the shards")
    parser.add_argument("--json", help="write the merged records here")
    parser.add_argument("--html", help="write the merged matrix here, as HTML")
    parser.add_argument("--sarif", help="write the holes here, as SARIF 2.1.0 (for code scanning)")
    parser.add_argument("--summary-md", help="write the Markdown summary here (for a CI job's summary)")
    parser.add_argument("--target", action="append", help="the matrix of these targets only (.env, secrets/, curl)")
    args = parser.parse_args(argv[1:])
    records, meta = merge(load(Path(shard)) for shard in args.shards)
    matrix = Matrix.of(r for r in records if not args.target or r.target in args.target)
    print("\n".join(matrix.lines()))
    if args.json:
        from .audit.coverage import of_meta

        dump(records, Path(args.json), meta=meta, coverage=of_meta(records, meta))
    if args.html:
        page.write(matrix, Path(args.html).resolve(), meta=meta)
    if args.sarif:
        sarif.write(records, Path(args.sarif), meta=meta)
    if args.summary_md:
        Path(args.summary_md).write_text(summary.markdown(records, meta=meta), encoding="utf-8")
    return 1 if matrix.holes() else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["audit"]:
        try:
            return audit(argv[1:])
        except ControlPlaneError as error:
            print(f"controlplane audit: {type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr)
            return 2
    parser = argparse.ArgumentParser(prog="controlplane", description="pytest-controlplane tools")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("audit", help="pytest --agent-audit [PATH]; `audit merge` joins the shards of one audit")
    serve_parser = commands.add_parser("serve", help="run the model gateway until interrupted")
    serve_parser.add_argument("--mode", default="replay", choices=("replay", "record", "auto", "live"))
    serve_parser.add_argument("--cassette", help="cassette file (replay, record, auto)")
    serve_parser.add_argument("--upstream", help="API to forward to (record, auto, live)")
    serve_parser.add_argument("--script", help="FILE.py:NAME of a ScriptedModel (or list of turns) to serve")
    tapes = commands.add_parser("cassettes", help="check, count or prune cassettes")
    tapes.add_argument("action", choices=("check", "stats", "prune"))
    tapes.add_argument("paths", nargs="*", help="cassette files or directories (default: cassettes)")
    tapes.add_argument("--json", action="store_true", help="machine-readable output")
    tapes.add_argument("--yes", action="store_true", help="prune: delete the unused cassettes")
    tapes.add_argument(
        "--tests", action="append", default=[], help="prune: test paths to collect (default: pytest's own testpaths)"
    )
    clis = commands.add_parser("cli", help="install Claude Code releases from the npm registry, list the CLIs")
    clis_actions = clis.add_subparsers(dest="action", required=True)
    install = clis_actions.add_parser("install", help="fetch a release into the user cache ($CONTROLPLANE_CLI_CACHE)")
    install.add_argument("version", help="a version (2.1.300) or latest")
    clis_actions.add_parser("list", help="the bundled CLI, `claude` on PATH and the cached releases")
    ident = commands.add_parser("secret-id", help="print the mask the reports on this machine show for a secret")
    ident.add_argument(
        "value",
        nargs="?",
        default="-",
        help="the secret (after `--` if it starts with -); none or -: "
        "one line read from stdin, which keeps the secret out of the shell's history",
    )
    args, extra = parser.parse_known_args(argv)
    # Paths after an option (`check --json cassettes/`) are left over by argparse: they are paths all the same.
    if extra and (args.command != "cassettes" or any(e.startswith("-") for e in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.paths += extra
    try:
        if args.command == "secret-id":
            from .canary.secret_id import secret_id

            return secret_id(args.value)
        if args.command == "cli":
            return claude_clis(args)
        return serve(args) if args.command == "serve" else cassettes(args)
    except ControlPlaneError as error:
        # One line, the fix included: a traceback here only hides what to do.
        print(f"controlplane {args.command}: {type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
