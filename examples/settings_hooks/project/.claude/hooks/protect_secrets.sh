#!/bin/bash
# PreToolUse guard in bash + jq: nothing may name the secrets/ folder.  It answers with a JSON decision.
target=$(jq -r '.tool_input.file_path // .tool_input.command // empty')
case "$target" in
  *secrets/*)
    jq -n --arg why "protect_secrets.sh: $target names secrets/" \
      '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: $why}}'
    ;;
esac
exit 0
