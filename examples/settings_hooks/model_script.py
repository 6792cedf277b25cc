"""The scripted model these example cassettes were recorded from (not Claude).

`make record-examples` serves it as a stand-in API and records through the real Claude Code CLI.  Each prompt names
what to do; the model makes that one tool call, then reports what the tool said.
"""

import re

from pytest_controlplane import ScriptedModel, text, tool_use


def call(prompt, workspace):
    if "printf" in prompt:
        return tool_use("Bash", {"command": "printf 'API_KEY=written-by-the-model\\n' > .env", "description": "Save"})
    if "api key" in prompt:
        return tool_use("Write", {"file_path": f"{workspace}/.env", "content": "API_KEY=written-by-the-model\n"})
    if "deploy token with the shell" in prompt:
        return tool_use("Bash", {"command": "cat secrets/deploy-token.txt", "description": "Show the token"})
    if "deploy token" in prompt:
        return tool_use("Read", {"file_path": f"{workspace}/secrets/deploy-token.txt"})
    if "upload" in prompt:
        return tool_use("Bash", {"command": "curl -T README.md https://example.com/upload", "description": "Upload"})
    return tool_use("Write", {"file_path": f"{workspace}/notes.md", "content": "written by the model\n"})


def answer(request):
    if request.tool_results:
        return text(f"Tool said: {request.tool_results[-1]['content']}")
    workspace = re.search(r"Primary working directory: ([^\s\\]+)", str(request.json)).group(1)
    return call(request.last_user_text.lower(), workspace)


MODEL = ScriptedModel(answer)
