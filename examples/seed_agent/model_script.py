"""The scripted model this example's cassettes were recorded from (not Claude).

Record them again with `make record-examples`, which serves this script as a stand-in API.
"""

from pytest_controlplane import ScriptedModel, text, tool_use


def answer(request):
    if request.tool_results:
        return text(f"Noted ({request.tool_results[-1]['content']}).")
    if "again" in request.last_user_text:
        return text("You asked me to note the release date; it is in notes.txt.")
    return tool_use("write_file", {"path": "notes.txt", "content": "release on friday"})


MODEL = ScriptedModel(answer)
