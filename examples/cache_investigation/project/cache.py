"""A small in-memory cache with a time-to-live, used by the web workers."""

import configparser
import time


def configured_ttl(path: str = "cache_config.ini") -> float:
    settings = configparser.ConfigParser()
    settings.read(path)
    return settings.getfloat("cache", "ttl", fallback=60.0)


class TTLCache:
    def __init__(self, ttl: float | None = None):
        self.ttl = ttl if ttl is not None else configured_ttl()
        self._entries = {}

    def get(self, key, default=None):
        entry = self._entries.get(key)
        if entry is None:
            return default
        value, expires = entry
        if time.monotonic() >= expires:
            del self._entries[key]
            return default
        return value

    def set(self, key, value):
        self._entries[key] = (value, time.monotonic() + self.ttl)
