"""Reports of agent tests: a self-contained HTML file per test, and the numbers for the terminal summary."""

from .data import collect, summary
from .html import render, write

__all__ = ["collect", "render", "summary", "write"]
