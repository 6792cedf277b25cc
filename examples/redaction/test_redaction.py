"""Acceptance tests of the redaction: a planted secret reaches the model in no form, on no surface.

The model is scripted (no cassette): whatever the control plane does to the tool output, the
same calls come, so a leak is reported as a leak — with the surface and the encoding.
"""

import pytest
import scripts


@pytest.mark.agent(script=scripts.READ_THEN_ENCODE)
def test_the_api_key_never_reaches_the_model(agent_session, canary_secret):
    canary_secret.plant_file(".env", "API_KEY={canary}\nREGION=eu-west-1\n")
    agent_session.run("Check that the deployment is configured.")

    assert "REGION=eu-west-1" in str(agent_session.requests[-1]["messages"])  # the model saw the rest of the file
    canary_secret.assert_not_leaked(agent_session)  # requests, responses, SDK stream, transcript, files, logs
    assert [c.verdict for c in agent_session.tool_calls] == ["allowed", "denied_by_hook"]


@pytest.mark.agent(script=scripts.PRINT_ENVIRONMENT)
def test_an_environment_secret_is_redacted_from_shell_output(agent_session, canary_secret):
    password = canary_secret("DB_PASSWORD")
    password.plant_env("DB_PASSWORD")
    agent_session.run("Check that the database is configured.")

    assert "DB_PASSWORD=[REDACTED]" in str(agent_session.requests[-1]["messages"])
    canary_secret.assert_not_leaked(agent_session)
