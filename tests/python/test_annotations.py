"""Annotations are not checked and have no effect, as in Numba
(docs/language.md, "Statements"): parameters, return and annotated locals
of any form compile and behave as the undecorated function; an annotated
assignment assigns, a bare annotation of a name assigns nothing and makes
the name local, so reading it is UnboundLocalError as in Python."""

from typing import Callable

import numpy as np
import pytest

import plait
from oracle import check


def annotated_parameters(a: "float64[:]", n: int, scale: np.float64 = 2.0, f: Callable[..., int] = 1,
                         g: lambda x=1, y=2: x = 3) -> tuple[float, "int"]:
    s: float = 0.0
    for i in range(n):
        s += a[i] * scale
    return s, g


def annotated_locals(a, k):
    x: int = 3
    y: "np.ndarray[int]" = k + x
    z: dict[str, list[int]] | None = a[0]
    w: (lambda u=1: u) = 2; v: int = w * 2
    total: float
    total = x + y + z + w + v
    return total


def annotation_of_an_element(a):
    a[0]: float = 5.0
    return a[0]


def bare_annotation_then_assignment(a, c):
    x: float
    if c:
        x = a[0]
    return x


def bare_annotation_read(a):
    x: int
    return x + a[0]


def bare_annotation_shadows_a_global(a):
    GLOBAL_SCALE: float
    return a[0] * GLOBAL_SCALE


GLOBAL_SCALE = 3.0


def test_annotated_parameters_and_return_are_ignored():
    kernel = plait.jit(annotated_parameters)
    check(kernel, np.arange(5.0), 4)
    check(kernel, np.arange(5.0), 2, 0.5, 0, 7)


def test_annotated_locals_assign():
    kernel = plait.jit(annotated_locals)
    check(kernel, np.array([1.5, 2.0]), 4)
    check(plait.jit(annotation_of_an_element), np.zeros(3))


def test_a_bare_annotation_assigns_nothing():
    kernel = plait.jit(bare_annotation_then_assignment)
    check(kernel, np.array([2.5]), True)
    with pytest.raises(UnboundLocalError, match="cannot access local variable 'x' where it is not associated with a "
                                                "value") as info:
        kernel(np.array([2.5]), False)
    with pytest.raises(UnboundLocalError) as expected:
        kernel.py_func(np.array([2.5]), False)
    assert str(info.value).startswith(str(expected.value))


@pytest.mark.parametrize("fn, name", [(bare_annotation_read, "x"), (bare_annotation_shadows_a_global, "GLOBAL_SCALE")])
def test_a_read_of_a_name_only_annotated_is_unbound(fn, name):
    with pytest.raises(UnboundLocalError):
        fn(np.ones(2))
    with pytest.raises(plait.KernelUnboundLocalError) as info:
        plait.jit(fn)(np.ones(2))
    assert isinstance(info.value, UnboundLocalError)
    assert f"cannot access local variable '{name}'" in info.value.message


def test_bare_annotations_of_other_targets_are_refused():
    def subscript(a):
        a[0]: int
        return a[0]

    with pytest.raises(plait.UnsupportedError, match="annotations without a value of anything but a plain name"):
        plait.jit(subscript)(np.zeros(2))
