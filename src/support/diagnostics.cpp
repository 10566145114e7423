// Source line lookup, Python-style error formatting, and the error classes.
#include "support/diagnostics.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace plait {

namespace {

// Line `line` of `text`, whose first line is `first_line`, without '\n'; null
// when `text` has no such line.
std::optional<std::string> text_line(const std::string& text, int first_line, int line) {
  const int index = line - first_line;
  if (index < 0) return std::nullopt;
  size_t start = 0;
  for (int i = 0; i < index; ++i) {
    const size_t newline = text.find('\n', start);
    if (newline == std::string::npos) return std::nullopt;
    start = newline + 1;
  }
  if (start >= text.size() && index > 0) return std::nullopt;
  size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  if (end > start && text[end - 1] == '\r') --end;
  return text.substr(start, end - start);
}

}  // namespace

std::string SourceFile::line_text(int line) const {
  if (std::optional<std::string> own = text_line(text, first_line, line)) return *own;
  for (const Inlined& callee : inlined) {
    if (std::optional<std::string> found = text_line(callee.text, callee.first_line, line)) return *found;
  }
  return "";
}

const std::string& SourceFile::path_of(int line) const {
  for (const Inlined& callee : inlined) {
    if (callee.line_offset != 0 && line >= callee.line_offset && line < callee.line_offset + kInlinedLineSpan)
      return callee.path;
  }
  return path;
}

int SourceFile::file_line(int line) const {
  for (const Inlined& callee : inlined) {
    if (callee.line_offset != 0 && line >= callee.line_offset && line < callee.line_offset + kInlinedLineSpan)
      return line - callee.line_offset;
  }
  return line;
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

// The character (code point) column of byte column `byte_col` of `line`, as
// Python counts columns; a column past the end of the line counts one per
// byte beyond it (a marker just after the last character).
int character_column(const std::string& line, int byte_col) {
  if (byte_col <= 0) return byte_col;
  const size_t end = std::min(line.size(), static_cast<size_t>(byte_col));
  int characters = 0;
  for (size_t i = 0; i < end; ++i) {
    // Every byte but a UTF-8 continuation byte (10xxxxxx) starts a character.
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++characters;
  }
  return characters + (byte_col - static_cast<int>(end));
}

// The characters of `source` (UTF-8), each with its bytes.
std::vector<std::string_view> characters_of(const std::string& source) {
  std::vector<std::string_view> characters;
  size_t start = 0;
  for (size_t i = 1; i <= source.size(); ++i) {
    if (i == source.size() || (static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) {
      characters.emplace_back(source.data() + start, i - start);
      start = i;
    }
  }
  return characters;
}

// The marker line under `source`: blanks up to the span (tabs copied so the
// marker stays aligned), then `^~~~` over a one-line span or `^` otherwise.
// `loc`'s columns count characters: one blank per character, whatever its
// length in UTF-8.
std::string caret_line(const std::string& source, const SourceLoc& loc) {
  const std::vector<std::string_view> characters = characters_of(source);
  std::string out;
  const size_t col = loc.col < 0 ? 0 : static_cast<size_t>(loc.col);
  for (size_t i = 0; i < col; ++i) out += (i < characters.size() && characters[i] == "\t") ? '\t' : ' ';
  out += '^';
  if (loc.end_line == loc.line && loc.end_col > loc.col + 1) {
    // A span never runs past the end of its line (plus one column for a
    // marker placed just after the last character).
    const size_t end = std::min(static_cast<size_t>(loc.end_col), std::max(characters.size(), col + 1));
    if (end > col + 1) out.append(end - col - 1, '~');
  }
  return out;
}

}  // namespace

SourceLoc character_columns(const SourceFile& file, SourceLoc loc) {
  if (!loc.valid()) return loc;
  loc.col = character_column(file.line_text(loc.line), loc.col);
  loc.end_col = character_column(file.line_text(loc.end_line), loc.end_col);
  return loc;
}

std::string source_excerpt(const SourceFile& file, const SourceLoc& loc) {
  const std::string source = loc.valid() ? file.line_text(loc.line) : "";
  return source.empty() ? "" : source + "\n" + caret_line(source, loc);
}

namespace {

std::string format_located(const SourceFile& file, SourceLoc loc, const std::string& message) {
  std::string out = "File \"" + file.path_of(loc.line) + "\"";
  if (loc.valid()) {
    out += ", line " + std::to_string(file.file_line(loc.line)) + ", col " + std::to_string(loc.col + 1);
    const std::string excerpt = source_excerpt(file, loc);
    if (!excerpt.empty()) out += "\n" + excerpt;
  }
  out += "\n" + message;
  return out;
}

}  // namespace

std::string format_diagnostic(const SourceFile& file, SourceLoc loc, const std::string& message) {
  return format_located(file, character_columns(file, loc), message);
}

namespace {

// `loc` with the line numbers of its own file.
SourceLoc in_its_file(const SourceFile& file, SourceLoc loc) {
  if (!loc.valid()) return loc;
  loc.line = file.file_line(loc.line);
  loc.end_line = file.file_line(loc.end_line);
  return loc;
}

}  // namespace

CompileError::CompileError(ErrorKind kind, std::string message, const SourceFile& file, SourceLoc loc)
    : std::runtime_error(format_diagnostic(file, loc, std::string(error_kind_name(kind)) + ": " + message)),
      kind_(kind),
      message_(std::move(message)),
      path_(file.path_of(loc.line)),
      loc_(in_its_file(file, character_columns(file, loc))) {}

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
