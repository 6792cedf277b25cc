"""The scripted model these example cassettes were recorded from (not Claude).

`make record-examples` serves it as a stand-in API and records through the real Claude Code CLI.
Each prompt names a file; the model writes it, then reports what the tool said.
"""

import re

from pytest_controlplane import ScriptedModel, text, tool_use

TARGETS = {"api key": ".env", "token": "secrets/token.txt", "note": "notes/today.md"}


def answer(request):
    if request.tool_results:
        result = request.tool_results[-1]
        return text(f"Tool said: {result['content']}")
    workspace = re.search(r"Primary working directory: ([^\s\\]+)", str(request.json)).group(1)
    prompt = request.last_user_text.lower()
    relative = next(path for word, path in TARGETS.items() if word in prompt)
    return tool_use("Write", {"file_path": f"{workspace}/{relative}", "content": "written by the model\n"})


MODEL = ScriptedModel(answer)
