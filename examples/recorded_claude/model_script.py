"""The scripted model these example cassettes were recorded from, served as a stand-in API (not Claude):

    pytest examples/recorded_claude --agent-mode=record --agent-script examples/recorded_claude/model_script.py:MODEL

Each prompt names what to write and how; the model calls that tool once, then reports what the tool said.
"""

import re

from pytest_controlplane import ScriptedModel, text, tool_use

TARGETS = {"by way of notes": "notes/../.env", "api key": ".env", "note": "notes/today.md"}  # the first named wins


def answer(request):
    if request.tool_results:
        return text(f"Tool said: {request.tool_results[-1]['content']}")
    workspace = re.search(r"Primary working directory: ([^\s\\]+)", str(request.json)).group(1)
    prompt = request.last_user_text.lower()
    if "shell" in prompt:
        return tool_use("Bash", {"command": "mkdir -p notes && echo 'written by the model' > notes/today.md",
                                 "description": "Write today's note"})
    relative = next(path for word, path in TARGETS.items() if word in prompt)
    return tool_use("Write", {"file_path": f"{workspace}/{relative}", "content": "written by the model\n"})


MODEL = ScriptedModel(answer)
