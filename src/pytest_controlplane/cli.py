"""The `controlplane` command: the gateway from a shell.

    controlplane serve --mode replay --cassette cassettes/x/test_y.yaml
    controlplane serve --script examples/claude_guard/script.py:MODEL   # a scripted stand-in API
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

from .errors import ControlPlaneError


def _load_script(spec: str) -> object:
    """`path/to/file.py:NAME` -> the object NAME defined in that file."""
    file, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"--script takes FILE.py:NAME, got {spec!r}")
    module_spec = importlib.util.spec_from_file_location(Path(file).stem, file)
    if module_spec is None or module_spec.loader is None:
        raise SystemExit(f"--script: cannot load {file}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def serve(args: argparse.Namespace) -> int:
    from .gateway import ModelGateway

    script = _load_script(args.script) if args.script else None
    try:
        gateway = ModelGateway(mode="script" if script is not None else args.mode, cassette=args.cassette,
                               upstream=args.upstream, script=script)
        gateway.open()
    except ControlPlaneError as error:
        print(f"controlplane serve: {error}", file=sys.stderr)
        return 2
    print(f"ANTHROPIC_BASE_URL={gateway.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        gateway.close(save=True)
        for problem in gateway.problems:
            print(f"controlplane serve: {type(problem).__name__}: {problem}", file=sys.stderr)
    return 1 if gateway.problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="controlplane", description="pytest-controlplane tools")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the model gateway until interrupted")
    serve_parser.add_argument("--mode", default="replay", choices=("replay", "record", "auto", "live"))
    serve_parser.add_argument("--cassette", help="cassette file (replay, record, auto)")
    serve_parser.add_argument("--upstream", help="API to forward to (record, auto, live)")
    serve_parser.add_argument("--script", help="FILE.py:NAME of a ScriptedModel (or list of turns) to serve")
    args = parser.parse_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
