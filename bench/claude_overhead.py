"""Gateway overhead on a real Claude Code CLI run: replayed 2-turn test vs the bare CLI.

    python bench/claude_overhead.py [runs]

Both sides run the same hermetic `query()` (Write a file, then answer) through the bundled CLI.
"bare" talks to a trivial local server that answers from memory; "replay" talks to the
ModelGateway replaying a cassette recorded from that same server.  Prints medians and the ratio.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, query

from pytest_controlplane import ModelGateway, World


def sse(message: dict) -> bytes:
    events = [("message_start", {"type": "message_start", "message": {**message, "content": []}})]
    for index, block in enumerate(message["content"]):
        start = {"type": "text", "text": ""} if block["type"] == "text" else {**block, "input": {}}
        delta = ({"type": "text_delta", "text": block["text"]} if block["type"] == "text"
                 else {"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]},
                                  "usage": {"output_tokens": 5}}), ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class Trivial(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args): pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        text = json.dumps(body)
        workspace = text.split("Primary working directory: ", 1)[1].split("\\n", 1)[0]
        first = not any(m["role"] == "assistant" for m in body["messages"])
        content = ([{"type": "tool_use", "id": "toolu_b1", "name": "Write",
                     "input": {"file_path": f"{workspace}/out.txt", "content": "x"}}] if first
                   else [{"type": "text", "text": "done"}])
        payload = sse({"id": "msg_b", "type": "message", "role": "assistant", "model": body["model"],
                       "content": content, "stop_reason": "tool_use" if first else "end_turn",
                       "usage": {"input_tokens": 10, "output_tokens": 1}})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def run_cli(world: World, base_url: str) -> float:
    options = ClaudeAgentOptions(cwd=str(world.workspace), env=world.env(base_url), permission_mode="acceptEdits",
                                 session_id=world.session_id)

    async def go():
        return [m async for m in query(prompt="Write out.txt", options=options)]

    start = time.perf_counter()
    asyncio.run(go())
    elapsed = time.perf_counter() - start
    assert (world.workspace / "out.txt").exists()
    return elapsed


def main(runs: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Trivial)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    root = Path(tempfile.mkdtemp(prefix="cp-bench-"))
    cassette = root / "bench.yaml"
    world = World.create(root / "record", test_id="bench")
    with ModelGateway(mode="record", cassette=cassette, upstream=upstream, roots=world.roots) as gateway:
        run_cli(world, gateway.base_url)
    bare, replay = [], []
    for n in range(runs):  # interleaved, so drift hits both sides alike
        world = World.create(root / f"bare{n}", test_id="bench")
        bare.append(run_cli(world, upstream))
        world = World.create(root / f"replay{n}", test_id="bench")
        with ModelGateway(mode="replay", cassette=cassette, roots=world.roots) as gateway:
            replay.append(run_cli(world, gateway.base_url))
        gateway.check()
    b, r = statistics.median(bare), statistics.median(replay)
    print(f"{'side':<8}{'median s':>10}{'min s':>8}{'max s':>8}   ({runs} runs each)")
    print(f"{'bare':<8}{b:>10.3f}{min(bare):>8.3f}{max(bare):>8.3f}")
    print(f"{'replay':<8}{r:>10.3f}{min(replay):>8.3f}{max(replay):>8.3f}")
    print(f"overhead: {r / b - 1:+.1%} of the bare CLI run ({(r - b) * 1000:+.0f} ms)")
    server.shutdown()
    shutil.rmtree(root)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
