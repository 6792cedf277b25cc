"""Replay time and cassette size against the number of turns: ours vs plain vcrpy (pytest-recording's defaults).

    python bench/cassette_scaling.py [N ...]        # default 5 20 100 300

An in-process agent loop on the anthropic SDK sends the Claude Code CLI's real system prompt and
tool definitions (~42 KB, taken from this repo's cassettes) with every request and makes N tool
calls, one per turn, each returning ~1.5 KB (as a file read does), before answering.  A scripted
stand-in API answers while recording.  Then, each timed from cassette file to last answer:

- agent: the same loop with the recorded answers handed over in-process (an httpx MockTransport,
         no cassette, no matching): what the agent itself costs, the floor for any replay;
- ours:  replayed through ModelGateway (a real HTTP server) from our cassette;
- vcrpy: replayed by vcrpy's use_cassette with pytest-recording's default configuration (record_mode
         "none" on replay, vcrpy's default matchers: method, scheme, host, port, path, query), in-process.

"gateway ms/req" is the gateway's own time per request, measured inside it: loading the cassette
and starting, serving each request from its request line in to its answer out (Exchange.seconds),
stopping.  "overhead ms/req" is (replay - agent) / requests: all that replaying adds to each model
call, the agent's own HTTP stack and the thread switches included (a difference of two noisy
times).  "http alone ms/req" is the same for a trivial HTTP server that answers the recorded
responses in order: the round trip any HTTP-level replay costs this agent.  "unique" is what any
cassette must hold: the system prompt and tools once, each message once, each response once.

Times are the best of R interleaved runs (R = 30 for N <= 20, 12 for N = 100, 8 above) in each of 3
fresh processes: the code is deterministic, so the fastest run is the one least disturbed by the
rest of the machine (timeit's reasoning); this VM's jitter moves medians of a 15 ms run by +-30 %.
The median of the processes' median ratios is printed too.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anthropic
import httpx2
import vcr as vcrpy
import yaml

from pytest_controlplane import ModelGateway, ScriptedModel, text, tool_use

REPO = Path(__file__).parent.parent


def cli_prompt() -> tuple[object, list]:
    """The system prompt and tools of a real Claude Code CLI 2.1.332 request, from the example cassettes."""
    cassette = REPO / "cassettes/examples/claude_guard/test_guard/test_ordinary_note_is_written.yaml"
    body = yaml.safe_load(cassette.read_text())["interactions"][0]["request"]["body"]
    request = json.loads(body if isinstance(body, str) else body["string"])
    return request["system"], request["tools"]


def run_loop(client: anthropic.Anthropic, system: object, tools: list, turns: int) -> int:
    messages = [{"role": "user", "content": "Go through the log, one line at a time."}]
    requests = 0
    while True:
        reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=256, system=system, tools=tools,
                                       messages=messages)
        requests += 1
        content = [b.model_dump(exclude_none=True, include={"type", "text", "id", "name", "input"})
                   for b in reply.content]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return requests
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": tool_output(requests)} for c in calls]})


def tool_output(number: int) -> str:
    """What a Read returns: ~1.5 KB of numbered lines, different each time."""
    return "".join(f"{i:>6}\t{number:04d}: event {i * number % 977} handled in {i * 7 % 113} ms\n" for i in range(40))


def script(turns: int) -> ScriptedModel:
    return ScriptedModel([tool_use("Read", {"file_path": f"log/{i}.txt"}) for i in range(turns)]
                         + [text("All lines read.")])


def unique_bytes(cassette: Path) -> int:
    """System and tools once, each message once, each response once (from the recorded cassette)."""
    from pytest_controlplane import Cassette

    loaded = Cassette.load(cassette)
    last = json.loads(loaded.interactions[-1].body)
    once = len(json.dumps(last["system"])) + len(json.dumps(last["tools"])) + len(json.dumps(last["messages"]))
    return once + sum(len(i.response["body"]["string"] or b"") for i in loaded.interactions)


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def in_process(responses: list[dict]) -> anthropic.Anthropic:
    """A client whose transport hands over the recorded answers in order, in-process."""
    answers = iter(responses)

    def answer(request: httpx2.Request) -> httpx2.Response:
        request.read()
        response = next(answers)
        return httpx2.Response(response["status"]["code"], content=response["body"]["string"],
                               headers={"content-type": "application/json"})

    return anthropic.Anthropic(base_url="http://agent.invalid", api_key="bench", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


class TrivialServer:
    """The cheapest HTTP server there is here: answers the recorded responses in order, no matching, no
    bookkeeping.  What an agent pays for the HTTP round trip alone."""

    def __init__(self, responses: list[dict]) -> None:
        self.bodies = [r["body"]["string"] for r in responses]
        self.served = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["content-length"]))
                body = owner.bodies[owner.served]
                owner.served += 1
                self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(body), body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def measure(turns: int, system: object, tools: list, root: Path) -> dict:
    from pytest_controlplane import Cassette

    ours, theirs = root / f"ours-{turns}.yaml", root / f"vcrpy-{turns}.yaml"
    with ModelGateway(script=script(turns)) as standin:
        url = standin.base_url
        client = anthropic.Anthropic(base_url=url, api_key="bench", max_retries=0)
        with ModelGateway(mode="record", cassette=ours, upstream=url, api_key="bench") as recorder:
            run_loop(anthropic.Anthropic(base_url=recorder.base_url, api_key="bench", max_retries=0), system, tools,
                     turns)
        standin.use_script(script(turns))
        recorder_vcr = vcrpy.VCR(record_mode="once", path_transformer=vcrpy.VCR.ensure_suffix(".yaml"))
        with recorder_vcr.use_cassette(str(theirs)):
            run_loop(client, system, tools, turns)
    responses = [i.response for i in Cassette.load(ours).interactions]

    def agent_alone() -> None:
        run_loop(in_process(responses), system, tools, turns)

    trivial = TrivialServer(responses)

    def http_alone() -> None:
        trivial.served = 0
        run_loop(anthropic.Anthropic(base_url=trivial.url, api_key="bench", max_retries=0, http_client=http), system,
                 tools, turns)

    # Each run makes its client, as a test does (the gateway's port is new each time), on one shared httpx client
    # (making one loads the TLS certificates: ~20 ms that would drown what is measured here).
    http = httpx2.Client()

    gateway_times: list[float] = []

    def replay_ours() -> None:
        start = time.perf_counter()
        gateway = ModelGateway(mode="replay", cassette=ours)
        with gateway:
            opened = time.perf_counter()
            run_loop(anthropic.Anthropic(base_url=gateway.base_url, api_key="bench", max_retries=0, http_client=http),
                     system, tools, turns)
            finished = time.perf_counter()
        stopped = time.perf_counter()
        # The gateway's own time: loading and starting, serving each request (from its request line in to its
        # answer out, see Exchange.seconds), stopping.  A request's time is set by its server thread after the last
        # byte is out, which can be after the client already has its answer: wait for each exchange's `served`
        # event (set with the time, in Exchange.finish), and refuse to sum a time that was never set.
        unserved = [e.request.index for e in gateway.exchanges if not e.served.wait(10)]
        if unserved:
            raise RuntimeError(f"the gateway's threads did not finish answering request(s) {unserved} in 10 s: "
                               "their times were never set")
        gateway_times.append(opened - start + sum(e.seconds for e in gateway.exchanges) + stopped - finished)

    def replay_vcrpy() -> None:
        player = vcrpy.VCR(record_mode="none", path_transformer=vcrpy.VCR.ensure_suffix(".yaml"))
        with player.use_cassette(str(theirs)):  # the stand-in is gone: vcrpy must answer
            run_loop(anthropic.Anthropic(base_url=url, api_key="bench", max_retries=0, http_client=http), system,
                     tools, turns)

    times: dict[str, list[float]] = {"agent": [], "http": [], "ours": [], "vcrpy": []}
    for _ in range(30 if turns <= 20 else 12 if turns <= 100 else 8):
        for name, run in (("agent", agent_alone), ("http", http_alone), ("ours", replay_ours),
                          ("vcrpy", replay_vcrpy)):
            times[name].append(timed(run))
    return {"turns": turns, "requests": turns + 1, **{k: min(v) for k, v in times.items()},
            "median_ratio": statistics.median(times["ours"]) / statistics.median(times["vcrpy"]),
            "gateway": min(gateway_times),
            "ours_bytes": ours.stat().st_size, "vcrpy_bytes": theirs.stat().st_size, "unique": unique_bytes(ours)}


PROCESSES = 3  # fresh interpreters per size


def main() -> None:
    if sys.argv[1:2] == ["--one"]:  # one size in this process: the raw figures, as JSON
        system, tools = cli_prompt()
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(measure(int(sys.argv[2]), system, tools, Path(tmp))))
        return
    print(f"{'N':>4} {'agent s':>8} {'ours s':>8} {'vcrpy s':>8} {'ours/vcrpy':>10} {'(median)':>8} "
          f"{'gateway ms/req':>14} {'ours overhead ms/req':>20} {'http alone ms/req':>17} "
          f"{'vcrpy overhead ms/req':>21} {'ours KB':>9} {'vcrpy KB':>9} {'unique KB':>9} {'ours/unique':>11}",
          flush=True)
    for turns in [int(a) for a in sys.argv[1:]] or [5, 20, 100, 300]:
        # Each size in fresh interpreters: what an earlier size left in memory does not weigh on the next, and
        # a process whose two threads the VM schedules badly (it happens: +60 % for a whole run) is outvoted.
        runs = [json.loads(subprocess.run([sys.executable, __file__, "--one", str(turns)], check=True,
                                          capture_output=True, text=True).stdout) for _ in range(PROCESSES)]
        r = {**runs[0], **{k: min(run[k] for run in runs) for k in ("agent", "http", "ours", "vcrpy", "gateway")},
             "median_ratio": statistics.median(run["median_ratio"] for run in runs)}
        print(f"{r['turns']:>4} {r['agent']:>8.3f} {r['ours']:>8.3f} {r['vcrpy']:>8.3f} "
              f"{r['ours'] / r['vcrpy']:>10.2f} {r['median_ratio']:>8.2f} {1000 * r['gateway'] / r['requests']:>14.2f} "
              f"{1000 * (r['ours'] - r['agent']) / r['requests']:>20.2f} "
              f"{1000 * (r['http'] - r['agent']) / r['requests']:>17.2f} "
              f"{1000 * (r['vcrpy'] - r['agent']) / r['requests']:>21.2f} {r['ours_bytes'] / 1e3:>9.0f} "
              f"{r['vcrpy_bytes'] / 1e3:>9.0f} {r['unique'] / 1e3:>9.0f} {r['ours_bytes'] / r['unique']:>11.2f}",
              flush=True)


if __name__ == "__main__":
    main()
