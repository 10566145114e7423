// A libFuzzer target over the compiler without the system compiler: the
// lexer, the parser, the module scan, lowering, the pass pipeline and both
// back ends' code generation to text (tools/fuzz/README.md).
//
// An input is a Python module whose first line says what to compile:
//
//   #fuzz FUNCTION [cpu|cuda] [boundscheck] [fastmath] [auto_simd] : SIGNATURE
//
// (`#fuzz scale cpu : f64[::1], f64[::1]`). Without that line, or with a
// signature Signature::parse rejects, the input still goes through the
// parser and the module scan. CompileError is the expected answer to a bad
// kernel; an InternalError is a compiler bug, so it aborts like a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/cuda/codegen_cuda.h"
#include "driver/compiler.h"
#include "frontend/parser.h"

namespace {

struct Request {
  std::string function;
  plait::Signature signature;
  plait::CompileOptions options;
};

// Reads the `#fuzz` line; false when it is missing or malformed.
bool parse_request(const std::string& text, Request& request) {
  if (text.rfind("#fuzz ", 0) != 0) return false;
  std::string header = text.substr(6, text.find('\n') - 6);
  size_t colon = header.find(':');
  if (colon == std::string::npos) return false;
  std::istringstream words(header.substr(0, colon));
  std::string word;
  if (!(words >> request.function)) return false;
  while (words >> word) {
    if (word == "cpu")
      request.options.target = plait::Target::CPU;
    else if (word == "cuda")
      request.options.target = plait::Target::CUDA;
    else if (word == "boundscheck")
      request.options.boundscheck = true;
    else if (word == "fastmath")
      request.options.fastmath = true;
    else if (word == "auto_simd")
      request.options.auto_simd = true;
    else
      return false;
  }
  try {
    request.signature = plait::Signature::parse(header.substr(colon + 1));
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

// The globals plaitc gives a whole file (tools/plaitc.cpp, module_globals).
plait::Globals module_globals(const plait::SourceFile& file) {
  plait::ModuleNames names = plait::scan_module_names(file);
  plait::Globals globals;
  for (const auto& [alias, module] : names.imports) {
    plait::GlobalValue value;
    value.module = module;
    globals[alias] = value;
  }
  for (const auto& [name, constant] : names.constants) {
    plait::GlobalValue value;
    if (const bool* b = std::get_if<bool>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Bool;
      value.bool_value = *b;
    } else if (const int64_t* i = std::get_if<int64_t>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Int;
      value.int_value = *i;
    } else if (const double* d = std::get_if<double>(&constant)) {
      value.kind = plait::GlobalValue::Kind::Float;
      value.float_value = *d;
    } else {
      continue;
    }
    globals[name] = value;
  }
  return globals;
}

void compile_to_text(const plait::SourceFile& file) {
  Request request;
  if (!parse_request(file.text, request)) {
    plait::parse_module(file);
    return;
  }
  request.options.disk_cache = false;
  // A pass that leaves invalid IR is a finding even when the emitter copes.
  request.options.verify_ir = true;
  plait::Globals globals = module_globals(file);
  plait::LoweredKernel lowered =
      plait::lower_kernel(file, request.function, request.signature, globals, request.options);
  if (request.options.target == plait::Target::CUDA) {
    plait::codegen::generate_cuda(lowered.function, request.options);
  } else {
    plait::generate_source(lowered.function, request.options);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  plait::SourceFile file;
  file.path = "fuzz.py";
  file.text.assign(reinterpret_cast<const char*>(data), size);
  try {
    compile_to_text(file);
  } catch (const plait::CompileError&) {
    // The answer to a bad kernel.
  } catch (const plait::InternalError& e) {
    std::fprintf(stderr, "InternalError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
