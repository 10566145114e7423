"""The Intrepydd applications: Plait against NumPy and Numba, validated, then timed.

    python -m plait.bench intrepydd --preset S [--kernels bigclam,pr_nibble]
                                    [--peers numpy,numba,plait] [--repeat 10]

The applications live in benchmarks/intrepydd/ of a Plait checkout (one
module per application, as ../shared/benchmarks/intrepydd-apps.md specifies
them: the NumPy version, the oracle; the Numba version; the Plait version,
the NumPy code decorated and changed only where the language needs it, with a
comment). They are found from the current directory upwards, or named with
--kernels-dir or PLAIT_INTREPYDD_DIR. The method is NPBench's (see `python -m
plait.bench npbench --help`): every implementation is validated against
NumPy's outputs on the same inputs before it is timed, and the median of the
timed runs is reported with its speedup over NumPy. The ablation (each
optimisation's contribution) is --peers plait,plait_no_licm,plait_no_fusion,
plait_no_alloc_hoist,plait_no_blas.
"""

from .npbench import Suite, main as run_suite

INTREPYDD = Suite("intrepydd", "Intrepydd applications", ("test", "S", "M"), "PLAIT_INTREPYDD_DIR")


def main(argv=None):
    return run_suite(argv, INTREPYDD, __doc__)
