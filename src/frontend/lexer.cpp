// The tokenizer: Python's lexical rules over the original text, with
// `#pragma` comments kept as tokens.
#include "frontend/lexer.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

namespace plait {

namespace {

constexpr std::string_view kKeywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",
};

// The most indentation levels a file may open (Python's tokenizer's limit).
constexpr size_t kMaxIndentLevels = 100;

constexpr std::string_view kThreeCharOps[] = {"**=", "//=", ">>=", "<<=", "..."};
constexpr std::string_view kTwoCharOps[] = {
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->", ":=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="};
constexpr std::string_view kOneCharOps = "+-*/%@&|^~<>()[]{},:.;=";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// The value of an alphanumeric character as a digit in base 36, else -1.
int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// The prefixes Python accepts before a string literal, lower-cased.
bool is_string_prefix(std::string lowered) {
  static constexpr std::string_view kPrefixes[] = {"r", "u", "b", "br", "rb", "f", "fr", "rf"};
  return std::find(std::begin(kPrefixes), std::end(kPrefixes), lowered) != std::end(kPrefixes);
}

// Indentation measured two ways, as Python does to detect ambiguous mixes of
// tabs and spaces: with tabs to the next multiple of 8, and with tabs as 1.
struct IndentLevel {
  int width = 0;
  int alt_width = 0;
};

struct PendingPragma {
  Token token;
  int width = 0;  // the indentation of the comment's line
};

class Lexer {
 public:
  explicit Lexer(const SourceFile& file) : file_(file) {
    size_t start = 0;
    while (true) {
      const size_t newline = file.text.find('\n', start);
      std::string line = file.text.substr(start, newline == std::string::npos ? std::string::npos : newline - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines_.push_back(std::move(line));
      if (newline == std::string::npos) break;
      start = newline + 1;
    }
  }

  LexedSource run() {
    while (li_ < lines_.size()) {
      const std::string& line = lines_[li_];
      IndentLevel level;
      size_t ci = 0;
      for (; ci < line.size(); ++ci) {
        const char c = line[ci];
        if (c == ' ') {
          ++level.width;
          ++level.alt_width;
        } else if (c == '\t') {
          level.width = (level.width / 8 + 1) * 8;
          ++level.alt_width;
        } else if (c == '\f') {
          level = IndentLevel{};
        } else {
          break;
        }
      }
      if (ci == line.size()) {
        if (!pending_.empty()) pending_.back().token.blank_line_after = true;
        ++li_;
        continue;
      }
      if (line[ci] == '#') {
        if (is_pragma_comment(line, ci)) pending_.push_back({pragma_token(ci), level.width});
        ++li_;
        continue;
      }
      apply_indentation(level, ci);
      ci_ = ci;
      lex_logical_line();
    }
    finish();
    return std::move(out_);
  }

 private:
  SourceLoc loc(size_t li, size_t col, size_t end_li, size_t end_col) const {
    return SourceLoc{file_.first_line + static_cast<int>(li), static_cast<int>(col),
                     file_.first_line + static_cast<int>(end_li), static_cast<int>(end_col)};
  }
  SourceLoc loc_here(size_t col, size_t end_col) const { return loc(li_, col, li_, end_col); }

  [[noreturn]] void fail(const std::string& message, SourceLoc where, ErrorKind kind = ErrorKind::Syntax) const {
    throw CompileError(kind, message, file_, where);
  }

  Token& emit(TokenKind kind, std::string text, SourceLoc where) {
    Token token;
    token.kind = kind;
    token.text = std::move(text);
    token.loc = where;
    out_.tokens.push_back(std::move(token));
    return out_.tokens.back();
  }

  static bool is_pragma_comment(const std::string& line, size_t ci) {
    return line.compare(ci, 7, "#pragma") == 0 &&
           (ci + 7 == line.size() || line[ci + 7] == ' ' || line[ci + 7] == '\t');
  }

  Token pragma_token(size_t hash_col) const {
    const std::string& line = lines_[li_];
    std::string text = line.substr(hash_col + 1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
    Token token;
    token.kind = TokenKind::Pragma;
    token.loc = loc_here(hash_col + 1, hash_col + 1 + text.size());
    token.text = std::move(text);
    return token;
  }

  // Emits the pending pragmas indented deeper than `width` (or, when
  // `deeper` is false, the others), keeping their order.
  void emit_pragmas(bool deeper, int width) {
    auto it = pending_.begin();
    while (it != pending_.end()) {
      if ((it->width > width) == deeper) {
        out_.tokens.push_back(std::move(it->token));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void inconsistent_tabs(size_t ci) const {
    fail("inconsistent use of tabs and spaces in indentation", loc_here(0, std::max<size_t>(ci, 1)));
  }

  // Emits INDENT/DEDENT for a logical line starting at column `ci`, and the
  // pragmas waiting above it: a pragma indented deeper than a dedented line
  // belongs to the block being closed, so it comes before the DEDENTs.
  void apply_indentation(IndentLevel level, size_t ci) {
    const SourceLoc here = loc_here(ci, ci + 1);
    if (indents_.empty()) {
      indents_.push_back(level);
    } else if (level.width == indents_.back().width) {
      if (level.alt_width != indents_.back().alt_width) inconsistent_tabs(ci);
    } else if (level.width > indents_.back().width) {
      if (level.alt_width <= indents_.back().alt_width) inconsistent_tabs(ci);
      // Python's limit, which also bounds the recursion of every later stage
      // over nested statements.
      if (indents_.size() > kMaxIndentLevels) fail("too many levels of indentation", here);
      indents_.push_back(level);
      emit(TokenKind::Indent, "", here);
    } else {
      emit_pragmas(true, level.width);
      while (indents_.size() > 1 && level.width < indents_.back().width) {
        indents_.pop_back();
        emit(TokenKind::Dedent, "", here);
      }
      if (level.width != indents_.back().width) {
        fail("unindent does not match any outer indentation level", loc_here(0, std::max<size_t>(ci, 1)));
      }
      if (level.alt_width != indents_.back().alt_width) inconsistent_tabs(ci);
    }
    for (PendingPragma& pragma : pending_) out_.tokens.push_back(std::move(pragma.token));
    pending_.clear();
  }

  void finish() {
    // The end of input sits just after the last line with text, so that
    // errors there show that line.
    size_t last = lines_.size() - 1;
    while (last > 0 && lines_[last].find_first_not_of(" \t\f") == std::string::npos) --last;
    const SourceLoc end = loc(last, lines_[last].size(), last, lines_[last].size() + 1);
    const int base = indents_.empty() ? 0 : indents_.front().width;
    emit_pragmas(true, base);
    for (size_t i = 1; i < indents_.size(); ++i) emit(TokenKind::Dedent, "", end);
    emit_pragmas(false, base);
    emit(TokenKind::EndOfInput, "", end);
  }

  // Lexes from (li_, ci_) to the end of the logical line, joining physical
  // lines inside brackets and after a backslash, and emits its NEWLINE.
  void lex_logical_line() {
    const size_t first_token = out_.tokens.size();
    while (true) {
      const std::string& line = lines_[li_];
      if (ci_ >= line.size()) {
        if (!brackets_.empty()) {
          if (li_ + 1 >= lines_.size()) {
            fail("'" + brackets_.back().text + "' was never closed", brackets_.back().loc);
          }
          ++li_;
          ci_ = 0;
          continue;
        }
        // A line holding only a backslash continuation forms no logical line.
        if (out_.tokens.size() == first_token) {
          ++li_;
          ci_ = 0;
          return;
        }
        const SourceLoc previous = out_.tokens.back().loc;
        emit(TokenKind::Newline, "",
             SourceLoc{previous.end_line, previous.end_col, previous.end_line, previous.end_col + 1});
        ++li_;
        ci_ = 0;
        return;
      }
      const char c = line[ci_];
      if (c == ' ' || c == '\t' || c == '\f') {
        ++ci_;
      } else if (c == '#') {
        if (is_pragma_comment(line, ci_)) out_.stray_pragmas.push_back(pragma_token(ci_));
        ci_ = line.size();
      } else if (c == '\\') {
        if (ci_ + 1 != line.size()) {
          fail("unexpected character after line continuation character", loc_here(ci_ + 1, ci_ + 2));
        }
        if (li_ + 1 >= lines_.size()) {
          fail("unexpected end of file after line continuation character", loc_here(ci_, ci_ + 1));
        }
        ++li_;
        ci_ = 0;
      } else if (is_name_start(c)) {
        lex_name_or_prefixed_string();
      } else if (is_digit(c) || (c == '.' && ci_ + 1 < line.size() && is_digit(line[ci_ + 1]))) {
        lex_number();
      } else if (c == '"' || c == '\'') {
        lex_string(li_, ci_, "");
      } else {
        lex_operator();
      }
    }
  }

  void lex_name_or_prefixed_string() {
    const std::string& line = lines_[li_];
    const size_t start = ci_;
    while (ci_ < line.size() && is_name_char(line[ci_])) ++ci_;
    std::string name = line.substr(start, ci_ - start);
    if (ci_ < line.size() && (line[ci_] == '"' || line[ci_] == '\'') && name.size() <= 2) {
      std::string lowered = name;
      for (char& ch : lowered) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      if (is_string_prefix(lowered)) {
        lex_string(li_, start, lowered);
        return;
      }
    }
    const TokenKind kind = is_python_keyword(name) ? TokenKind::Keyword : TokenKind::Name;
    emit(kind, std::move(name), loc_here(start, ci_));
  }

  // Reads digits with single underscores between them into `digits`.
  void read_decimal_digits(std::string& digits) {
    const std::string& line = lines_[li_];
    while (ci_ < line.size() && is_digit(line[ci_])) {
      digits += line[ci_++];
      if (ci_ < line.size() && line[ci_] == '_') {
        if (ci_ + 1 >= line.size() || !is_digit(line[ci_ + 1])) {
          fail("invalid decimal literal", loc_here(ci_, ci_ + 1));
        }
        ++ci_;
      }
    }
  }

  void emit_int(const std::string& digits, int base, size_t start) {
    uint64_t value = 0;
    bool overflow = false;
    for (char c : digits) {
      const auto d = static_cast<uint64_t>(digit_value(c));
      if (value > (std::numeric_limits<uint64_t>::max() - d) / static_cast<uint64_t>(base)) {
        overflow = true;
        break;
      }
      value = value * static_cast<uint64_t>(base) + d;
    }
    constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
    // Python's ints are unbounded: only kernels reject a literal beyond int64.
    const bool too_large = overflow || value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    Token& token = emit(TokenKind::Int, lines_[li_].substr(start, ci_ - start), loc_here(start, ci_));
    if (!overflow && value == kMinMagnitude) {
      token.int_value = std::numeric_limits<int64_t>::min();
    } else if (!too_large) {
      token.int_value = static_cast<int64_t>(value);
    }
    if (too_large) {
      token.deferred_error =
          DeferredError{ErrorKind::Syntax, "integer literal is too large for a 64-bit integer", token.loc};
    }
  }

  void lex_number() {
    const std::string& line = lines_[li_];
    const size_t start = ci_;
    if (line[ci_] == '0' && ci_ + 1 < line.size() &&
        std::string_view("xXoObB").find(line[ci_ + 1]) != std::string_view::npos) {
      const char letter = static_cast<char>(line[ci_ + 1] | 0x20);
      const int base = letter == 'x' ? 16 : letter == 'o' ? 8 : 2;
      const std::string kind_name = letter == 'x' ? "hexadecimal" : letter == 'o' ? "octal" : "binary";
      ci_ += 2;
      std::string digits;
      while (ci_ < line.size()) {
        const char c = line[ci_];
        if (c == '_') {
          const int next = ci_ + 1 < line.size() ? digit_value(line[ci_ + 1]) : -1;
          if (next < 0 || next >= base) fail("invalid " + kind_name + " literal", loc_here(ci_, ci_ + 1));
          ++ci_;
          continue;
        }
        const int d = digit_value(c);
        if (d < 0 && !is_name_char(c)) break;
        if (d < 0 || d >= base) {
          if (is_digit(c)) {
            fail(std::string("invalid digit '") + c + "' in " + kind_name + " literal", loc_here(ci_, ci_ + 1));
          }
          fail("invalid " + kind_name + " literal", loc_here(start, ci_ + 1));
        }
        digits += c;
        ++ci_;
      }
      if (digits.empty()) fail("invalid " + kind_name + " literal", loc_here(start, ci_));
      emit_int(digits, base, start);
      return;
    }

    std::string digits;
    bool is_float = false;
    read_decimal_digits(digits);
    if (ci_ < line.size() && line[ci_] == '.') {
      is_float = true;
      digits += '.';
      ++ci_;
      read_decimal_digits(digits);
    }
    if (ci_ < line.size() && (line[ci_] == 'e' || line[ci_] == 'E')) {
      size_t exponent = ci_ + 1;
      if (exponent < line.size() && (line[exponent] == '+' || line[exponent] == '-')) ++exponent;
      if (exponent >= line.size() || !is_digit(line[exponent]))
        fail("invalid decimal literal", loc_here(start, exponent));
      is_float = true;
      digits += 'e';
      if (line[ci_ + 1] == '-') digits += '-';
      ci_ = exponent;
      read_decimal_digits(digits);
    }
    const bool imaginary = ci_ < line.size() && (line[ci_] == 'j' || line[ci_] == 'J');
    if (imaginary) ++ci_;
    if (ci_ < line.size() && is_name_char(line[ci_])) fail("invalid decimal literal", loc_here(start, ci_ + 1));

    if (!is_float && !imaginary) {
      if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos) {
        fail("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
             loc_here(start, ci_));
      }
      emit_int(digits, 10, start);
      return;
    }
    double value = 0.0;
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (result.ec == std::errc::result_out_of_range) {
      // Overflow gives inf and underflow gives 0 (or a subnormal), as in Python.
      value = std::strtod(digits.c_str(), nullptr);
    } else if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
      fail("invalid decimal literal", loc_here(start, ci_));
    }
    Token& token = emit(TokenKind::Float, line.substr(start, ci_ - start), loc_here(start, ci_));
    token.float_value = value;
    if (imaginary) {
      token.deferred_error =
          DeferredError{ErrorKind::Unsupported, "complex literals are not supported in Plait kernels", token.loc};
    }
  }

  // Decodes the escape sequence at line[i] == '\\' into `value`; returns the
  // index after it. A `\N{...}` escape is kept as written and recorded in
  // `deferred`.
  size_t decode_escape(const std::string& line, size_t i, std::string& value, bool bytes,
                       std::optional<DeferredError>& deferred) const {
    const char e = line[i + 1];
    switch (e) {
      case '\\':
      case '\'':
      case '"':
        value += e;
        return i + 2;
      case 'n':
        value += '\n';
        return i + 2;
      case 't':
        value += '\t';
        return i + 2;
      case 'r':
        value += '\r';
        return i + 2;
      case 'a':
        value += '\a';
        return i + 2;
      case 'b':
        value += '\b';
        return i + 2;
      case 'f':
        value += '\f';
        return i + 2;
      case 'v':
        value += '\v';
        return i + 2;
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t code = 0;
      size_t j = i + 1;
      while (j < line.size() && j < i + 4 && line[j] >= '0' && line[j] <= '7') code = code * 8 + (line[j++] - '0');
      if (bytes) {
        value += static_cast<char>(code & 0xFF);
      } else {
        append_utf8(value, code);
      }
      return j;
    }
    const size_t hex_digits = e == 'x' ? 2 : (e == 'u' && !bytes) ? 4 : (e == 'U' && !bytes) ? 8 : 0;
    if (hex_digits > 0) {
      uint32_t code = 0;
      for (size_t j = i + 2; j < i + 2 + hex_digits; ++j) {
        const int d = j < line.size() ? digit_value(line[j]) : -1;
        if (d < 0 || d >= 16) {
          fail(std::string("truncated \\") + e + " escape", loc_here(i, std::min(j + 1, line.size())));
        }
        code = code * 16 + static_cast<uint32_t>(d);
      }
      if (code > 0x10FFFF) fail("illegal Unicode character", loc_here(i, i + 2 + hex_digits));
      if (bytes) {
        value += static_cast<char>(code);
      } else {
        append_utf8(value, code);
      }
      return i + 2 + hex_digits;
    }
    if (e == 'N' && !bytes) {
      const size_t close = line.find('}', i);
      if (i + 2 >= line.size() || line[i + 2] != '{' || close == std::string::npos) {
        fail("malformed \\N character escape", loc_here(i, i + 2));
      }
      if (!deferred) {
        deferred = DeferredError{ErrorKind::Unsupported, "\\N{...} escapes are not supported in Plait kernels",
                                 loc_here(i, close + 1)};
      }
      value += line.substr(i, close + 1 - i);
      return close + 1;
    }
    // Python keeps unknown escapes as written.
    value += '\\';
    value += e;
    return i + 2;
  }

  void lex_string(size_t start_li, size_t start_ci, std::string prefix) {
    const bool raw = prefix.find('r') != std::string::npos;
    const bool bytes = prefix.find('b') != std::string::npos;
    const char quote = lines_[li_][ci_];
    const std::string triple_quote(3, quote);
    const bool triple = lines_[li_].compare(ci_, 3, triple_quote) == 0;
    const SourceLoc start = loc(start_li, start_ci, start_li, ci_ + (triple ? 3 : 1));
    ci_ += triple ? 3 : 1;
    std::string value;
    std::optional<DeferredError> deferred;
    while (true) {
      const std::string& line = lines_[li_];
      if (ci_ >= line.size()) {
        if (!triple) fail("unterminated string literal", start);
        if (li_ + 1 >= lines_.size()) fail("unterminated triple-quoted string literal", start);
        value += '\n';
        ++li_;
        ci_ = 0;
        continue;
      }
      const char c = line[ci_];
      if (c == '\\') {
        if (ci_ + 1 >= line.size()) {
          // A backslash at the end of a line continues the string.
          if (li_ + 1 >= lines_.size()) {
            fail(triple ? "unterminated triple-quoted string literal" : "unterminated string literal", start);
          }
          if (raw) value += "\\\n";
          ++li_;
          ci_ = 0;
          continue;
        }
        if (raw) {
          value += c;
          value += line[ci_ + 1];
          ci_ += 2;
        } else {
          ci_ = decode_escape(line, ci_, value, bytes, deferred);
        }
        continue;
      }
      if (c == quote && (!triple || line.compare(ci_, 3, triple_quote) == 0)) {
        ci_ += triple ? 3 : 1;
        break;
      }
      value += c;
      ++ci_;
    }
    Token& token = emit(TokenKind::String, std::move(value), loc(start_li, start_ci, li_, ci_));
    token.string_prefix = std::move(prefix);
    token.deferred_error = std::move(deferred);
  }

  void lex_operator() {
    const std::string& line = lines_[li_];
    const std::string_view rest = std::string_view(line).substr(ci_);
    std::string_view op;
    for (std::string_view candidate : kThreeCharOps) {
      if (rest.substr(0, 3) == candidate) op = candidate;
    }
    if (op.empty()) {
      for (std::string_view candidate : kTwoCharOps) {
        if (rest.substr(0, 2) == candidate) op = candidate;
      }
    }
    if (op.empty() && kOneCharOps.find(rest[0]) != std::string_view::npos) op = rest.substr(0, 1);
    if (op.empty()) {
      const unsigned char c = static_cast<unsigned char>(rest[0]);
      if (c < 0x20 || c == 0x7F) fail("invalid non-printable character", loc_here(ci_, ci_ + 1));
      fail(std::string("invalid character '") + rest[0] + "'", loc_here(ci_, ci_ + 1));
    }
    const SourceLoc where = loc_here(ci_, ci_ + op.size());
    if (op == "(" || op == "[" || op == "{") {
      brackets_.push_back(emit(TokenKind::Op, std::string(op), where));
    } else if (op == ")" || op == "]" || op == "}") {
      if (brackets_.empty()) fail("unmatched '" + std::string(op) + "'", where);
      const std::string& open = brackets_.back().text;
      const char expected = open == "(" ? ')' : open == "[" ? ']' : '}';
      if (op[0] != expected) {
        fail("closing parenthesis '" + std::string(op) + "' does not match opening parenthesis '" + open + "'", where);
      }
      brackets_.pop_back();
      emit(TokenKind::Op, std::string(op), where);
    } else {
      emit(TokenKind::Op, std::string(op), where);
    }
    ci_ += op.size();
  }

  const SourceFile& file_;
  std::vector<std::string> lines_;
  size_t li_ = 0;
  size_t ci_ = 0;
  std::vector<IndentLevel> indents_;
  std::vector<Token> brackets_;  // the open brackets, innermost last
  std::vector<PendingPragma> pending_;
  LexedSource out_;
};

}  // namespace

const char* token_kind_name(TokenKind kind) {
  switch (kind) {
    case TokenKind::Name:
      return "name";
    case TokenKind::Keyword:
      return "keyword";
    case TokenKind::Int:
      return "integer";
    case TokenKind::Float:
      return "float";
    case TokenKind::String:
      return "string";
    case TokenKind::Op:
      return "operator";
    case TokenKind::Newline:
      return "end of line";
    case TokenKind::Indent:
      return "indent";
    case TokenKind::Dedent:
      return "dedent";
    case TokenKind::Pragma:
      return "pragma";
    case TokenKind::EndOfInput:
      return "end of input";
  }
  return "token";
}

bool is_python_keyword(std::string_view word) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), word) != std::end(kKeywords);
}

LexedSource tokenize(const SourceFile& file) {
  return Lexer(file).run();
}

}  // namespace plait
