#include "codegen/runtime_text.h"

#include "codegen/c_emitter.h"
#include "runtime/abi.h"
#include "runtime/device_errors.h"
#include "support/diagnostics.h"

namespace plait {
// The texts of runtime/abi.h, runtime/plait_runtime.h and
// runtime/portable_runtime.h (cmake/embed_file.cmake).
extern const char* const kRuntimeAbiText;
extern const char* const kRuntimeHeaderText;
extern const char* const kPortableRuntimeText;
}  // namespace plait

namespace plait::codegen {

std::string error_codes_text() {
  std::string out = "enum error_kind_code : int {\n";
  out += "  kind_index_error = " + std::to_string(PLAIT_INDEX_ERROR) + ",\n";
  out += "  kind_zero_division_error = " + std::to_string(PLAIT_ZERO_DIVISION_ERROR) + ",\n";
  out += "  kind_value_error = " + std::to_string(PLAIT_VALUE_ERROR) + ",\n";
  out += "  kind_overflow_error = " + std::to_string(PLAIT_OVERFLOW_ERROR) + ",\n";
  out += "};\n\nenum message_code : int {\n";
  for (const runtime::DeviceMessageInfo& m : runtime::device_messages()) {
    out += "  " + std::string(m.name) + " = " + std::to_string(static_cast<int>(m.id)) + ",\n";
  }
  out += "};\n";
  return out;
}

std::string with_portable_runtime(const char* text) {
  std::string out = text;
  const std::string include = "#include \"portable_runtime.h\"\n";
  const size_t at = out.find(include);
  PLAIT_ASSERT(at != std::string::npos);
  out.replace(at, include.size(), kPortableRuntimeText);
  return out;
}

const std::string& host_runtime_text() {
  static const std::string text = [] {
    std::string out = std::string(kRuntimeAbiText) + "\n// ---- plait runtime\nnamespace plait {\n\n";
    out += error_codes_text();
    out += "\n// The messages' printf formats over the error's three values, by number.\n";
    out += "inline constexpr const char* message_formats[] = {\n";
    for (const runtime::DeviceMessageInfo& m : runtime::device_messages()) {
      out += "    \"" + escape_path(m.format) + "\",\n";
    }
    out += "};\n\n}  // namespace plait\n\n";
    out += with_portable_runtime(kRuntimeHeaderText);
    return out;
  }();
  return text;
}

}  // namespace plait::codegen
