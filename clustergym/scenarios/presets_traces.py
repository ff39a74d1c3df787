"""Trace-driven presets (rms-google, bfjs-google, lotes-google, autoscale-google, alibaba-gpu).

They are built by :mod:`clustergym.traces.scenarios` from the real traces, which
clustergym does not ship: a builder raises
:class:`~clustergym.traces.paths.TraceNotFoundError` (a ``ScenarioError``) that
says where to point ``$CLUSTERGYM_TRACES`` when the data is absent.
"""

from clustergym.scenarios.presets import register_preset
from clustergym.traces.scenarios import TRACE_PRESETS

for _name, (_build, _description) in TRACE_PRESETS.items():
    register_preset(_name, _build, _description)
