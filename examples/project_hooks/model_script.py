"""The scripted model these example cassettes were recorded from (not Claude).

`make record-examples` serves it as a stand-in API and records through the real Claude Code CLI.
Each prompt names a target; the model writes it with the tool the prompt asks for, then reports
what the tool said.
"""

import re

from pytest_controlplane import ScriptedModel, text, tool_use

TARGETS = {"api key": ".env", "token": "secrets/token.txt", "changelog": "CHANGELOG.md"}


def answer(request):
    if request.tool_results:
        return text(f"Tool said: {request.tool_results[-1]['content']}")
    workspace = re.search(r"Primary working directory: ([^\s\\]+)", str(request.json)).group(1)
    prompt = request.last_user_text.lower()
    relative = next(path for word, path in TARGETS.items() if word in prompt)
    if "shell" in prompt:
        return tool_use("Bash", {"command": f"mkdir -p $(dirname {relative}) && echo 'written by the model' > {relative}",
                                 "description": f"Write {relative}"})
    return tool_use("Write", {"file_path": f"{workspace}/{relative}", "content": "written by the model\n"})


MODEL = ScriptedModel(answer)
