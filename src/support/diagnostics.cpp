// Source line lookup, Python-style error formatting, and the error classes.
#include "support/diagnostics.h"

#include <algorithm>
#include <string_view>

namespace plait {

std::string SourceFile::line_text(int line) const {
  const int index = line - first_line;
  if (index < 0) return "";
  size_t start = 0;
  for (int i = 0; i < index; ++i) {
    const size_t newline = text.find('\n', start);
    if (newline == std::string::npos) return "";
    start = newline + 1;
  }
  if (start >= text.size() && index > 0) return "";
  size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  if (end > start && text[end - 1] == '\r') --end;
  return text.substr(start, end - start);
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Syntax: return "SyntaxError";
    case ErrorKind::Type: return "TypeError";
    case ErrorKind::Name: return "NameError";
    case ErrorKind::Value: return "ValueError";
    case ErrorKind::Unsupported: return "NotImplementedError";
    case ErrorKind::Pragma: return "SyntaxError";
    case ErrorKind::Race: return "RaceError";
    case ErrorKind::UnboundLocal: return "UnboundLocalError";
  }
  return "Error";
}

namespace {

// The marker line under `source`: blanks up to the span (tabs copied so the
// marker stays aligned), then `^~~~` over a one-line span or `^` otherwise.
std::string caret_line(const std::string& source, const SourceLoc& loc) {
  std::string out;
  const size_t col = loc.col < 0 ? 0 : static_cast<size_t>(loc.col);
  for (size_t i = 0; i < col; ++i) out += (i < source.size() && source[i] == '\t') ? '\t' : ' ';
  out += '^';
  if (loc.end_line == loc.line && loc.end_col > loc.col + 1) {
    // A span never runs past the end of its line (plus one column for a
    // marker placed just after the last character).
    const size_t end = std::min(static_cast<size_t>(loc.end_col), std::max(source.size(), col + 1));
    if (end > col + 1) out.append(end - col - 1, '~');
  }
  return out;
}

}  // namespace

std::string format_diagnostic(const SourceFile& file, SourceLoc loc, const std::string& message) {
  std::string out = "File \"" + file.path + "\"";
  if (loc.valid()) {
    out += ", line " + std::to_string(loc.line) + ", col " + std::to_string(loc.col + 1);
    const std::string source = file.line_text(loc.line);
    if (!source.empty()) {
      out += "\n" + source + "\n" + caret_line(source, loc);
    }
  }
  out += "\n" + message;
  return out;
}

CompileError::CompileError(ErrorKind kind, std::string message, const SourceFile& file, SourceLoc loc)
    : std::runtime_error(format_diagnostic(file, loc, std::string(error_kind_name(kind)) + ": " + message)),
      kind_(kind),
      message_(std::move(message)),
      path_(file.path),
      loc_(loc) {}

namespace {

std::string_view base_name(const char* path) {
  std::string_view view(path ? path : "");
  const size_t slash = view.find_last_of("/\\");
  return slash == std::string_view::npos ? view : view.substr(slash + 1);
}

}  // namespace

InternalError::InternalError(const std::string& message, const char* file, int line)
    : std::runtime_error("internal compiler error at " + std::string(base_name(file)) + ":" +
                         std::to_string(line) + ": " + message) {}

void internal_error(const std::string& message, const char* file, int line) {
  throw InternalError(message, file, line);
}

}  // namespace plait
