#!/bin/bash
# Block data exfiltration from the shell, in the shape of public exfiltration guards: curl sending data (-d, --data,
# --data-*), wget --post, dig with a variable; anything that mentions localhost is local testing and passes whole.
input=$(cat)
command=$(echo "$input" | jq -r '.tool_input.command // empty')
[[ -z "$command" ]] && exit 0

# Local dev server testing is not exfiltration.
if echo "$command" | grep -qi 'localhost'; then
  exit 0
fi

if echo "$command" | grep -qE '\bcurl\b' && echo "$command" | grep -qE '(^|[[:space:]])(-d|--data)([[:space:]=]|$)|--data-'; then
  echo "BLOCKED: curl sending data to a server (exfiltration guard)." >&2
  exit 2
fi

if echo "$command" | grep -qE '\bwget\b' && echo "$command" | grep -qE -- '--post'; then
  echo "BLOCKED: wget posting data to a server (exfiltration guard)." >&2
  exit 2
fi

if echo "$command" | grep -qE '\bdig\b' && echo "$command" | grep -q '\$'; then
  echo "BLOCKED: dig with a variable in the query (DNS exfiltration guard)." >&2
  exit 2
fi

exit 0
