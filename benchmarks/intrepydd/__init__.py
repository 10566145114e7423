"""The Intrepydd applications (Zhou et al., Onward! 2020), written for Plait's
benchmark suite as ../shared/benchmarks/intrepydd-apps.md specifies them.

Each module holds one application with the layout of the NPBench modules
(benchmarks/npbench/__init__.py): PRESETS, PARAMETERS, OUTPUTS,
initialize(preset) with seeded synthetic inputs, the NumPy version
kernel_numpy (the oracle), kernel_numba, kernel_plait (the NumPy code
decorated, changed only where the language needs it, with a comment) and
RTOL, the validation's relative tolerance. `python -m plait.bench intrepydd`
runs them.
"""

KERNELS = (
    "bigclam",
    "changepoint",
    "ipnsw",
    "ista",
    "pr_nibble",
    "sinkhorn_wmd",
)
