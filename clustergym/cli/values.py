"""The command line's ``key=value`` rule; it lives in :mod:`clustergym.keyvalue` (the library reads
the settings a run folder records by the same rule)."""

from clustergym.keyvalue import parse_pairs, parse_stage, parse_value, split_prefix

__all__ = ["parse_value", "parse_pairs", "parse_stage", "split_prefix"]
