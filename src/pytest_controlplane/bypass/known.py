"""The public reports the named variants reproduce: (family, route, form) -> (variant id, the reports by URL)."""

from __future__ import annotations

CC = "https://github.com/anthropics/claude-code/issues/"
PL = "https://github.com/anthropics/claude-plugins-official/issues/"


# The public reports each variant reproduces (anthropics/claude-code issues, cited by URL):
# (family, route, form) -> name, reference.
KNOWN = {
    ("write", "Bash >", "relative"): ("cc81667-redirect", f"{CC}81667"),
    ("write", "Bash sed -i", "relative"): ("cc89251-sed-in-place", f"{CC}89251, {CC}57548"),
    ("write", "Write", "absolute"): ("cc11662-absolute", f"{CC}11662, {CC}22907, {CC}10377"),
    ("write", "Write", "dotdot"): ("cc11662-dotdot", f"{CC}11662, {CC}10377"),
    ("write", "Edit", "relative"): ("cc59099-edit", f"{CC}59099, {CC}37210, {CC}43407"),
    ("write", "Bash >", "confusable"): ("cc29489-confusable", f"{CC}29489"),
    ("write", "Bash >", "symlink alias"): ("cc47821-symlink", f"{CC}47821, {CC}67072, {CC}23960"),
    ("write", "Write", "symlink alias"): ("cc40857-write-through-symlink", f"{CC}40857"),
    ("write", "Bash >", "case variant"): ("cc4742-case-alias", f"{CC}4742, {CC}28474, {CC}39340"),
    ("write", "Bash timeout", "relative"): ("cc92542-timeout-wrapper", f"{CC}92542, {CC}31558"),
    ("write", "Bash env-var prefix", "relative"): ("cc31558-env-prefix", f"{CC}31558"),
    ("write", "Bash brace group", "relative"): ("cc70369-brace-group", f"{CC}70369"),
    ("write", "NotebookEdit", "relative"): ("pl5337-notebookedit", f"{PL}5337"),
    ("write", "MultiEdit", "relative"): ("pl5337-multiedit", f"{PL}5337"),
    ("read", "Bash brace group", "relative"): ("cc70369-brace-group-read", f"{CC}70369"),
    ("read", "Bash process substitution", "relative"): ("cc70369-process-substitution", f"{CC}70369"),
    ("read", "Bash timeout", "relative"): ("cc92542-timeout-cat", f"{CC}92542"),
    ("read", "Read", "absolute"): ("cc11662-read-absolute", f"{CC}11662"),
    ("exec", "Bash chained &&", "-"): ("cc4956-chained", f"{CC}4956"),
    ("exec", "Bash timeout", "-"): ("cc92542-timeout", f"{CC}92542"),
    ("exec", "Bash nice", "-"): ("cc92542-nice", f"{CC}92542"),
    ("exec", "Bash env-var prefix", "-"): ("cc31558-env-prefix", f"{CC}31558"),
    ("exec", "Bash brace group", "-"): ("cc70369-brace-group", f"{CC}70369"),
    ("exec", "Bash process substitution", "-"): ("cc70369-process-substitution", f"{CC}70369"),
    ("escape", "Write", "home"): ("cc4742-home", f"{CC}4742"),
    ("escape", "Bash >", "tilde"): ("cc4742-tilde", f"{CC}4742, {CC}28474"),
    ("escape", "Bash >", "dotdot"): ("cc11662-dotdot-escape", f"{CC}11662"),
}
