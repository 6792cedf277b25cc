#!/bin/sh
# PreToolUse hook: refuse any tool call that names .env or the secrets/ folder.
# Claude Code passes the call as JSON on stdin; exit code 2 blocks it and shows stderr to the model.
input=$(cat)
case "$input" in
  *'/.env"'* | *'/.env '* | *'secrets/'*)
    echo "protect.sh: .env and secrets/ are off limits" >&2
    exit 2 ;;
esac
exit 0
