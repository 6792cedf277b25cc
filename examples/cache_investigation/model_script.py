"""The scripted model these example cassettes were recorded from (not Claude).

`make record-examples` serves it as a stand-in API. It reads files when asked to investigate or to
check the config, and otherwise answers from what the conversation already holds.
"""

from pytest_controlplane import ScriptedModel, text, tool_use


def seen(request, needle):
    return needle in str(request.json["messages"])


def answer(request):
    if request.tool_results:
        content = request.tool_results[-1]["content"]
        if "[cache]" in content:
            return text("The config sets ttl = 30 with the memory backend.")
        return text("cache.py is a TTL cache over a plain dict; entries expire lazily in get().")
    prompt = request.last_user_text.strip().splitlines()[-1]  # the question comes last, after any context
    if "Investigate" in prompt:
        return tool_use("read_cache_file", {"path": "cache.py"})
    if "config" in prompt:
        return tool_use("read_cache_file", {"path": "cache_config.ini"})
    if "thread-safe" in prompt:
        if seen(request, "threading.Lock"):
            return text("Yes: get and set now run under a threading.Lock.")
        return text("No: get and set change the dict without a lock, so two workers can race.")
    if "fix" in prompt:
        return text("Guard get and set with one threading.Lock.")
    if "expire" in prompt:
        return text("An entry expires ttl seconds after set(); get() drops it when it is read late.")
    return text("I need more to go on.")


MODEL = ScriptedModel(answer)
