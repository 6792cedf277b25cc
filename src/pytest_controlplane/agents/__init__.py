"""Adapters that run the user's agent against the gateway, and the isolated world they run in."""
