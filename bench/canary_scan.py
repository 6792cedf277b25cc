"""Canary scan throughput: 50 MB of agent transcript, 5 canaries, every encoding.

    python bench/canary_scan.py [megabytes]      # default 50

The transcript is JSONL made of the real requests stored in this repo's cassettes (the Claude
Code CLI's system prompt, tools, tool results), repeated to size, with a few encoded copies of
the canaries planted in it.  Prints the time of `find` over it and MB/s, cold (needles and
automata built) — the number a test pays.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from pytest_controlplane import Canary

REPO = Path(__file__).parent.parent


def transcript_lines() -> list[bytes]:
    lines = []
    for cassette in sorted((REPO / "cassettes").rglob("*.yaml")):
        for interaction in (yaml.safe_load(cassette.read_text()) or {}).get("interactions", []):
            body = interaction["request"]["body"]
            text = body if isinstance(body, str) else (body or {}).get("string", "")
            if text:
                lines.append(json.dumps({"type": "user", "message": text}).encode())
    return lines


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 50
    lines = transcript_lines()
    canaries = Canary.mint("bench", "c0")
    for index in range(1, 5):
        canaries(f"c{index}")
    planted = [canaries.value.encode(), base64.b64encode(b"k=" + canaries.family[1].value.encode()),
               canaries.family[2].value.encode().hex().encode(), canaries.family[3].value[::-1].encode(),
               " ".join(canaries.family[4].value).encode()]
    chunks, size, index = [], 0, 0
    while size < megabytes * 1e6:
        line = lines[index % len(lines)]
        if index % 500 == 17:
            line += b" " + planted[(index // 500) % len(planted)]
        chunks.append(line)
        size += len(line) + 1
        index += 1
    data = b"\n".join(chunks)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "transcript.jsonl"
        path.write_bytes(data)
        start = time.perf_counter()
        leaks = canaries.find(path)
        seconds = time.perf_counter() - start
    print(f"transcript: {len(data) / 1e6:.1f} MB, {index} lines, {sum(1 for c in chunks if not c.isascii())} "
          f"non-ASCII lines; 5 canaries, {len(leaks)} leaks found")
    print(f"find: {seconds:.2f} s = {len(data) / 1e6 / seconds:.0f} MB/s")


if __name__ == "__main__":
    main()
