"""python -m plait.bench <suite> [options]: runs a benchmark suite.

Suites: npbench (NPBench's 20 kernels against NumPy, Numba and, on the GPU,
CuPy, JAX and PyTorch); `python -m plait.bench npbench --help` lists its options.
"""

import sys

SUITES = ("npbench",)


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if not argv or argv[0] not in SUITES:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    from . import npbench

    return npbench.main(argv[1:])


sys.exit(main(sys.argv[1:]))
