"""Bypass variants: every route and spelling by which an agent could reach a forbidden effect (corpus, forms,
routes, the tools the agent really offers), the world each needs (setup), the attempt, and the verdict from the
effect (judge)."""
