"""Which Claude Code CLI each claude-agent-sdk release bundles, read from PyPI without downloading the wheels.

    python tools/sdk_cli_table.py [FIRST_VERSION]      # prints `"0.2.189": "2.1.332",` lines, oldest first

Each Linux x86-64 wheel is opened in place with HTTP range requests (its zip directory, then the one small
member claude_agent_sdk/_cli_version.py).  The table in cli_facts.py (BUNDLED_BY_SDK) is this script's output.
"""

from __future__ import annotations

import io
import json
import re
import sys
import urllib.parse
import urllib.request
import zipfile

INDEX = "https://pypi.org/pypi/claude-agent-sdk/json"


class RemoteFile(io.RawIOBase):
    """A read-only file over HTTP range requests (enough for zipfile)."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.position = url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = {0: offset, 1: self.position + offset, 2: self.size + offset}[whence]
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, count: int = -1) -> bytes:
        end = self.size if count < 0 else min(self.size, self.position + count)
        if end <= self.position:
            return b""
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{end - 1}"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            data = answer.read()
        self.position += len(data)
        return data


def bundled_cli(release_files: list[dict]) -> str | None:
    wheel = next((f for f in release_files if f["filename"].endswith("manylinux_2_17_x86_64.whl")
                  or ("x86_64" in f["filename"] and "linux" in f["filename"])), None)
    if wheel is None:
        return None
    with zipfile.ZipFile(RemoteFile(urllib.parse.urljoin(INDEX, wheel["url"]), wheel["size"])) as archive:
        text = archive.read("claude_agent_sdk/_cli_version.py").decode()
    found = re.search(r'__cli_version__\s*=\s*"([^"]+)"', text)
    return found.group(1) if found else None


def main() -> None:
    first = tuple(int(p) for p in (sys.argv[1] if len(sys.argv) > 1 else "0.2.150").split("."))
    with urllib.request.urlopen(INDEX, timeout=60) as answer:
        releases = json.load(answer)["releases"]
    for version in sorted(releases, key=lambda v: tuple(int(p) for p in v.split("."))):
        if tuple(int(p) for p in version.split(".")) >= first and releases[version]:
            print(f'    "{version}": "{bundled_cli(releases[version])}",', flush=True)


if __name__ == "__main__":
    main()
