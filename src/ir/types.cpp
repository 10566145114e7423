// Type rules shared by the front end and the back ends: NEP 50 promotion,
// the join used for locals, and the signature spelling.
#include "ir/types.h"

#include <stdexcept>

namespace plait {

namespace {

// Bool < integer < floating point: the order in which NEP 50 lets a weak
// (Python) scalar stay weak or take the strong operand's type.
int category(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return 0;
    case ScalarKind::Int32:
    case ScalarKind::Int64: return 1;
    case ScalarKind::Float32:
    case ScalarKind::Float64: return 2;
  }
  return 0;
}

ScalarKind default_kind(int cat) {
  return cat == 0 ? ScalarKind::Bool : cat == 1 ? ScalarKind::Int64 : ScalarKind::Float64;
}

ScalarKind promote_strong(ScalarKind a, ScalarKind b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca == 0) return b;
  if (cb == 0) return a;
  if (ca == 1 && cb == 1) return ScalarKind::Int64;  // int32 with int64
  if (ca == 2 && cb == 2) return ScalarKind::Float64;
  // An integer with a float: float32 holds int32 only inexactly, so NumPy
  // goes to float64 for both widths.
  return ScalarKind::Float64;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

std::string strip_spaces(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t') out += c;
  return out;
}

}  // namespace

int ScalarType::bits() const {
  switch (kind) {
    case ScalarKind::Bool: return 8;
    case ScalarKind::Int32:
    case ScalarKind::Float32: return 32;
    case ScalarKind::Int64:
    case ScalarKind::Float64: return 64;
  }
  return 64;
}

std::string to_string(ScalarType t) {
  if (t.weak) {
    switch (category(t.kind)) {
      case 0: return "bool";
      case 1: return "int";
      default: return "float";
    }
  }
  switch (t.kind) {
    case ScalarKind::Bool: return "b1";
    case ScalarKind::Int32: return "i32";
    case ScalarKind::Int64: return "i64";
    case ScalarKind::Float32: return "f32";
    case ScalarKind::Float64: return "f64";
  }
  return "?";
}

const char* numpy_dtype_name(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return "bool";
    case ScalarKind::Int32: return "int32";
    case ScalarKind::Int64: return "int64";
    case ScalarKind::Float32: return "float32";
    case ScalarKind::Float64: return "float64";
  }
  return "?";
}

const char* c_type_name(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return "bool";
    case ScalarKind::Int32: return "int32_t";
    case ScalarKind::Int64: return "int64_t";
    case ScalarKind::Float32: return "float";
    case ScalarKind::Float64: return "double";
  }
  return "?";
}

ScalarType promote(ScalarType a, ScalarType b) {
  if (a.weak && b.weak) {
    int c = std::max(category(a.kind), category(b.kind));
    return ScalarType{default_kind(c), true};
  }
  if (a.weak || b.weak) {
    const ScalarType& strong = a.weak ? b : a;
    const ScalarType& weak = a.weak ? a : b;
    int cw = category(weak.kind), cs = category(strong.kind);
    if (cw <= cs) return strong;
    return ScalarType{default_kind(cw), false};
  }
  return ScalarType{promote_strong(a.kind, b.kind), false};
}

ScalarType unify(ScalarType a, ScalarType b) { return promote(a, b); }

std::string to_string(const ArrayType& t) {
  std::string s = to_string(ScalarType{t.dtype, false}) + "[";
  for (int d = 0; d < t.ndim; ++d) {
    if (d) s += ", ";
    bool unit = (t.layout == Layout::C && d == t.ndim - 1) || (t.layout == Layout::F && d == 0);
    s += unit ? "::1" : ":";
  }
  return s + "]";
}

std::string to_string(const ValueType& t) { return t.is_array() ? to_string(t.array) : to_string(t.scalar); }

namespace {

ScalarType parse_scalar(const std::string& name, const std::string& whole) {
  static const struct {
    const char* name;
    ScalarType type;
  } kNames[] = {
      {"b1", ScalarType::b1()},       {"i32", ScalarType::i32()},       {"i64", ScalarType::i64()},
      {"f32", ScalarType::f32()},     {"f64", ScalarType::f64()},       {"bool", ScalarType::py_bool()},
      {"int", ScalarType::py_int()},  {"float", ScalarType::py_float()},
  };
  for (const auto& n : kNames)
    if (name == n.name) return n.type;
  throw std::invalid_argument("unknown type '" + name + "' in signature \"" + whole +
                              "\" (expected b1, i32, i64, f32, f64, bool, int or float)");
}

ValueType parse_value_type(const std::string& item, const std::string& whole) {
  std::string s = strip_spaces(item);
  size_t bracket = s.find('[');
  if (bracket == std::string::npos) return ValueType::of(parse_scalar(s, whole));
  if (s.back() != ']') throw std::invalid_argument("missing ']' in \"" + item + "\"");
  ScalarType elem = parse_scalar(s.substr(0, bracket), whole);
  if (elem.weak) throw std::invalid_argument("array element types are b1, i32, i64, f32 or f64, not '" + s.substr(0, bracket) + "'");
  std::string dims = s.substr(bracket + 1, s.size() - bracket - 2);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = dims.find(',', start);
    parts.push_back(dims.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ArrayType at;
  at.dtype = elem.kind;
  at.ndim = static_cast<int>(parts.size());
  if (at.ndim > 4) throw std::invalid_argument("arrays have at most 4 dimensions: \"" + item + "\"");
  int unit_dim = -1;
  for (int d = 0; d < at.ndim; ++d) {
    if (parts[d] == "::1") {
      if (unit_dim >= 0) throw std::invalid_argument("only one dimension can be '::1' in \"" + item + "\"");
      unit_dim = d;
    } else if (parts[d] != ":") {
      throw std::invalid_argument("each dimension is ':' or '::1' in \"" + item + "\"");
    }
  }
  if (unit_dim < 0) at.layout = Layout::Any;
  else if (unit_dim == at.ndim - 1) at.layout = Layout::C;
  else if (unit_dim == 0) at.layout = Layout::F;
  else throw std::invalid_argument("'::1' must be the first (F order) or last (C order) dimension in \"" + item + "\"");
  return ValueType::of(at);
}

}  // namespace

Signature Signature::parse(const std::string& text) {
  Signature sig;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      sig.args.push_back(parse_value_type(current, text));
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) throw std::invalid_argument("unbalanced brackets in signature \"" + text + "\"");
  if (!trim(current).empty()) sig.args.push_back(parse_value_type(current, text));
  else if (!sig.args.empty()) throw std::invalid_argument("trailing ',' in signature \"" + text + "\"");
  return sig;
}

std::string Signature::to_string() const {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) s += ", ";
    s += plait::to_string(args[i]);
  }
  return s;
}

}  // namespace plait
