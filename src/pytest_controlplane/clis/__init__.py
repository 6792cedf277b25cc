"""The Claude Code CLIs a run may use, and how one is chosen (`--agent-cli`, the `agent` marker's `cli=`,
`ClaudeAgent(cli=...)`, the audit's `--cli`).  Pytest-free; the standard library only.

    npm      a release on the npm registry: its versions, tarball and sha512 integrity; the download, verified
    cache    the releases installed into a user cache (one folder per version), once, safely from many processes
    choice   a choice (VERSION, latest, bundled, system or a PATH) resolved to the executable, its version and source
"""
