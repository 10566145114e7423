"""Functions in a module of their own, called by the kernels of
test_calls.py: their globals are this module's (SCALE, `numpy as numpy`),
and their lines are this file's."""

import numpy

SCALE = 3


def scaled(x):
    return x * SCALE


def row_norms(X):
    out = numpy.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = numpy.sqrt(numpy.sum(X[i] * X[i]))
    return out


def element(a, i):
    return a[i]


def undefined_name(x):
    return x + NOT_DEFINED  # noqa: F821
