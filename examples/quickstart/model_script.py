"""The scripted model these examples' cassettes were recorded from (not Claude).

Record them again with `make record-examples`, which serves this script as a stand-in API.
"""

from pytest_controlplane import ScriptedModel, text, tool_use


def answer(request):
    if request.tool_results:
        outcome = request.tool_results[-1]["content"]
        return text(f"Done ({outcome}).")
    prompt = request.last_user_text
    if ".env" in prompt:
        return tool_use("write_file", {"path": "notes/../.env", "content": "API_KEY=sk-live-123"})
    return tool_use("write_file", {"path": "notes/hello.md", "content": "hello"})


MODEL = ScriptedModel(answer)
