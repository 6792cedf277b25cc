"""The pytest wiring, and only wiring: the plugin pytest loads (entry point `pytest_controlplane.plugin`) is these
modules.  Each imports the shared `keys` (stash keys, user properties, the names of its fixtures) and the core,
and none imports another in a loop (import-linter's `acyclic_siblings` contract); the work happens in the core.

    options    the command-line options, ini keys and markers, checked at configure; `bypass_variants` ids
    fixtures   model_gateway, scripted_model, agent, agent_session, canary_secret, bypass_variants, ...
    stand_in   --agent-script: the scripted stand-in a recording run forwards to, served for the run
    reports    each agent test's numbers and HTML report, and the run's table of agent tests
    ci         the run's holes where CI looks: SARIF, the job summary, annotations
    warm       the warm CLIs bypass variants and audit items play in
    audit_cases  what an audit tries: targets (given, or what the repository has), modes, families, classes
    audit      --agent-audit: its items in each directory given, and their records
    audit_end    the audit's end: the matrix and totals last, its files, what a quick audit leaves out
    progress   the audit's quiet terminal: one progress line instead of a letter and a traceback per item
    internal_errors  no crash passes: an internal error anywhere (an xdist worker too) fails the run, said in one line
"""

pytest_plugins = [
    "pytest_controlplane.plugin.options",
    "pytest_controlplane.plugin.fixtures",
    "pytest_controlplane.plugin.stand_in",
    "pytest_controlplane.plugin.reports",
    "pytest_controlplane.plugin.ci",
    "pytest_controlplane.plugin.warm",
    "pytest_controlplane.plugin.audit",
    "pytest_controlplane.plugin.audit_end",
    "pytest_controlplane.plugin.progress",
    "pytest_controlplane.plugin.internal_errors",
]
