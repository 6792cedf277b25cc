"""A stock vcrpy cassette of api.anthropic.com, recorded by another project, replays unchanged."""

import shutil
from pathlib import Path

DATA = Path(__file__).parent / "data" / "stock_anthropic.yaml"

STOCK_USER = '''
import anthropic, pytest, yaml
from pathlib import Path


@pytest.mark.agent(cassette="stock_anthropic.yaml")
def test_stock_cassette(model_gateway):
    client = anthropic.Anthropic(base_url=model_gateway.base_url, api_key="unused", max_retries=0)
    reply = client.messages.create(model="claude-3-5-haiku-20241022", max_tokens=64,
                                   messages=[{"role": "user", "content": "Say hello"}])
    assert reply.content[0].text == "Hello! How can I help you today?"
    with client.messages.stream(model="claude-3-5-haiku-20241022", max_tokens=64,
                                messages=[{"role": "user", "content": "Say hello in French"}]) as events:
        assert events.get_final_message().content[0].text == "Bonjour le monde"

    # What went over the wire is the cassette's own bytes: the gzip body still gzip-encoded.
    stored = yaml.load(Path("stock_anthropic.yaml").read_text(), Loader=yaml.Loader)["interactions"]
    served = model_gateway.exchanges
    assert served[0].body == stored[0]["response"]["body"]["string"]
    assert served[0].body[:2] == b"\\x1f\\x8b"
    assert served[1].body.decode() == stored[1]["response"]["body"]["string"]
    assert [e.source for e in served] == ["cassette", "cassette"]
'''


def test_stock_vcrpy_cassette_replays_unchanged(pytester):
    shutil.copy(DATA, pytester.path / "stock_anthropic.yaml")
    before = (pytester.path / "stock_anthropic.yaml").read_bytes()
    pytester.makepyfile(test_stock=STOCK_USER)
    pytester.runpytest().assert_outcomes(passed=1)
    assert (pytester.path / "stock_anthropic.yaml").read_bytes() == before
