// The run-time texts both back ends paste into what they generate: the files
// of runtime/ that CMake embeds into the compiler (cmake/embed_file.cmake),
// with runtime/portable_runtime.h pasted where each includes it, and the
// enumerations of error kinds and messages generated from runtime/abi.h and
// runtime/device_errors.
#pragma once

#include <string>

namespace plait::codegen {

// What a CPU kernel and the host part of a CUDA kernel begin with: the text
// of abi.h, the error kinds, message numbers and message formats that
// plait_runtime.h raises portable_runtime.h's errors with, then
// plait_runtime.h.
const std::string& host_runtime_text();

// The enumerations error_kind_code (kind_index_error, ...) and message_code
// (msg_index_out_of_bounds, ...) that portable_runtime.h and generated code
// raise errors with, as C++ declarations for inside namespace plait.
std::string error_codes_text();

// `text` with its line `#include "portable_runtime.h"` replaced by the text
// of runtime/portable_runtime.h.
std::string with_portable_runtime(const char* text);

}  // namespace plait::codegen
