"""Does a written regression module end each test as the audit ended its item?  Do two audits agree?

    python tools/compare_audit_runs.py AUDIT.xml MODULE.py MODULE.xml
    python tools/compare_audit_runs.py --json WARM.json COLD.json

AUDIT.xml is the junit file of `pytest --agent-audit DIR --agent-audit-write MODULE.py --junitxml AUDIT.xml`
(default targets and modes), MODULE.xml that of `pytest MODULE.py --junitxml MODULE.xml`.  With --json, two
`--agent-audit-json` files of the same audit (warm and cold, say) are compared record by record: the cell, what held
it or why not (the worlds' own paths aside) and the reproduction.  Prints how many cases ended alike, and every one
that did not; exits 1 if any differ.
"""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from pytest_controlplane.audit import DEFAULT_MODES, DEFAULT_TARGETS, cases, parse_targets

Case = tuple[str, str, str, str]  # family, target, variant (or "offered-tools"), mode


def statuses(junit: Path) -> dict[str, str]:
    """Test name -> failed / skipped / error / passed."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        status = next((s for s in ("failure", "skipped", "error") if case.find(s) is not None), "passed")
        found[case.get("name", "")] = {"failure": "failed"}.get(status, status)
    return found


def audit_cases(junit: Path) -> dict[Case, str]:
    every = cases(parse_targets(DEFAULT_TARGETS), DEFAULT_MODES)
    by_id = {c.id: (c.family, c.target, c.variant, c.mode) for c in every}
    return {by_id[name[len("test_audit[") : -1]]: status for name, status in statuses(junit).items()}


def module_cases(module: Path, junit: Path) -> dict[Case, str]:
    source = module.read_text()
    holes = dict(re.findall(r"def (test_hole_\w+)\(.*?attempt_case\(agent_session, ('[^']*', '[^']*', '[^']*')", source,
                            re.S))
    listed = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for row in ast.literal_eval(node.value):
                listed["-".join(row)] = tuple(row)
    ended: dict[Case, str] = {}
    for name, status in statuses(junit).items():
        base, param = name[:-1].split("[", 1)
        key = (*ast.literal_eval(f"({holes[base]})"), param) if base in holes else listed[param]
        ended[key] = status
    return ended


def _words(text: str) -> str:
    """A record's words without what differs between two runs of one audit: the worlds' paths, ids, durations."""
    text = re.sub(r"/\S*?/(agent-world|pool-\d+)(-isolated-\d+)?", "<world>", text)
    return re.sub(r"toolu_\w+|[0-9a-f]{8}-[0-9a-f-]{27}|\b\d+\.\d+ s\b", "<id>", text)


def compare_json(first: Path, second: Path) -> int:
    from pytest_controlplane.audit import load

    seen = [{r.key: r for r in load(path)[0]} for path in (first, second)]
    differ = []
    for key in sorted(seen[0].keys() | seen[1].keys()):
        one, two = (records.get(key) for records in seen)
        if one is None or two is None:
            differ.append(f"  {key}: only in {first.name if two is None else second.name}")
            continue
        for field in ("cell", "detail", "reproduction"):
            a, b = _words(getattr(one, field)), _words(getattr(two, field))
            if field == "detail":  # the command a detail quotes is clipped, its world's path with it (cold: a long one);
                a, b = (re.sub(r"`[^`\n]*`", "`<command>`", words) for words in (a, b))  # reproduction has it whole
            if a != b:
                differ.append(f"  {key} {field}: {a!r} / {b!r}")
    warm = [sum(r.warm for r in records.values()) for records in seen]
    print(f"{len(seen[0])} and {len(seen[1])} records ({warm[0]} and {warm[1]} warm); {len(differ)} difference(s)")
    print("\n".join(differ))
    return 1 if differ else 0


def main() -> int:
    if sys.argv[1:2] == ["--json"]:
        return compare_json(Path(sys.argv[2]), Path(sys.argv[3]))
    audit, module, pinned = (Path(a) for a in sys.argv[1:4])
    before, after = audit_cases(audit), module_cases(module, pinned)
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    counts = {s: sum(1 for v in before.values() if v == s) for s in ("failed", "passed", "skipped", "error")}
    print(f"{len(before)} audit items ({counts}); {len(after)} module tests; {len(before) - len(differ)} ended alike")
    for key in differ:
        print(f"  {key}: audit {before.get(key)}, module {after.get(key)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
