#!/bin/bash
# Block network access from the shell: the guard most teams write first (curl and wget by name).
input=$(cat)
command=$(echo "$input" | jq -r '.tool_input.command // empty')

if [[ "$command" =~ (^|[^[:alnum:]_-])(curl|wget)([[:space:]]|$) ]]; then
  echo "Network access is blocked in this project (curl/wget)." >&2
  exit 2
fi

exit 0
