# Small kernels for the plaitc command-line tests.
import numpy as np

SCALE = 2.5


def scale(x, y):
    n = x.shape[0]
    #pragma parallel for
    for i in range(n):
        y[i] = SCALE * x[i]


def total(x):
    s = 0.0
    #pragma parallel for reduction(+: s)
    for i in range(x.shape[0]):
        s += x[i]
    return s
