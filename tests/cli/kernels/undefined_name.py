# A kernel with a user error: an undefined name on line 6.
import numpy as np


def broken(x):
    return x[0] + not_defined_anywhere
