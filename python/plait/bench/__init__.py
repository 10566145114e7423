"""Plait's benchmark suites, run with `python -m plait.bench <suite> ...`."""
