"""Property-based differential tests: random well-typed kernels drawn from
the grammar of tests/python/random_kernels.py, each compiled with
`plait.jit` and compared with the undecorated function on its arguments
(tests/python/random_kernel_oracle.py; docs/testing.md, "Random kernels").
"""

from hypothesis import given

from random_kernel_oracle import check_case, hypothesis_settings
from random_kernels import kernel_cases


@hypothesis_settings
@given(kernel_cases())
def test_random_kernel(case):
    check_case(case, "cpu")
