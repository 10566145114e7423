// The NumPy C API in the extension's translation units. NumPy's functions
// are reached through one table (PyArray_API) that core_module.cpp fills
// when the module is imported; the other files refer to that same table.
#pragma once

#define PY_ARRAY_UNIQUE_SYMBOL plait_numpy_api
#ifndef PLAIT_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#endif
#define NPY_NO_DEPRECATED_API NPY_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
