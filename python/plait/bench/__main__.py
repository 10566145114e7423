"""python -m plait.bench <suite> [options]: runs a benchmark suite.

Suites: npbench (NPBench's 20 kernels against NumPy, Numba and, on the GPU,
CuPy, JAX and PyTorch); sparse (sparse kernels written with SciPy against
SciPy, PyTorch and, on the GPU, CuPy and PyG); attention (plait.attention
over affine patterns against FlexAttention and SDPA, on the GPU); intrepydd
(the Intrepydd data-science applications against NumPy and Numba, on the
CPU). `python -m plait.bench <suite> --help` lists a suite's options.
"""

import importlib
import sys

SUITES = ("npbench", "sparse", "attention", "intrepydd")


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if not argv or argv[0] not in SUITES:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return importlib.import_module(f".{argv[0]}", __package__).main(argv[1:])


sys.exit(main(sys.argv[1:]))
