"""What the benchmark suites' kernel modules (benchmarks/npbench,
benchmarks/intrepydd) share: preset lookup, and Numba's decorators when Numba
is installed (without it, the Numba versions raise when called, and the
harness skips the peer with a note before ever calling them)."""

try:
    import numba
except ImportError:
    numba = None


def sizes(presets, preset):
    """The size parameters of a preset: a name from `presets` or a dict of sizes."""
    if isinstance(preset, dict):
        return preset
    try:
        return presets[preset]
    except KeyError:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(presets)}") from None


class _NumbaMissing:
    """Stands in for a Numba-compiled function when Numba is not installed."""

    def __init__(self, fn):
        self.py_func = fn

    def __call__(self, *args, **kwargs):
        raise ImportError("numba is not installed")


if numba is not None:
    njit = numba.njit
    prange = numba.prange
else:
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return _NumbaMissing(args[0])
        return _NumbaMissing

    prange = range
