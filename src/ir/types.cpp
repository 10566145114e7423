// Type rules shared by the front end and the back ends: NEP 50 promotion,
// the join used for locals, and the signature spelling.
#include "ir/types.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace plait {

namespace {

// Bool < integer < floating point: the order in which NEP 50 lets a weak
// (Python) scalar stay weak or take the strong operand's type.
int category(ScalarKind k) {
  ScalarType t{k, false};
  return t.is_bool() ? 0 : t.is_int() ? 1 : 2;
}

ScalarKind default_kind(int cat) {
  return cat == 0 ? ScalarKind::Bool : cat == 1 ? ScalarKind::Int64 : ScalarKind::Float64;
}

// Two integer kinds: the same signedness keeps the wider; a signed and an
// unsigned one go to a signed kind that holds both, which for uint64 does
// not exist, so NumPy goes to float64.
ScalarKind promote_ints(ScalarType a, ScalarType b) {
  if (a.is_unsigned() == b.is_unsigned()) return a.bits() >= b.bits() ? a.kind : b.kind;
  const ScalarType& s = a.is_unsigned() ? b : a;
  const ScalarType& u = a.is_unsigned() ? a : b;
  if (s.bits() > u.bits()) return s.kind;
  if (u.bits() == 64) return ScalarKind::Float64;
  return int_kind(u.bits() * 2, false);
}

ScalarKind promote_strong(ScalarKind a, ScalarKind b) {
  if (a == b) return a;
  ScalarType ta{a, false}, tb{b, false};
  int ca = category(a), cb = category(b);
  if (ca == 0) return b;
  if (cb == 0) return a;
  if (ca == 1 && cb == 1) return promote_ints(ta, tb);
  if (ca == 2 && cb == 2) return ScalarKind::Float64;
  // An integer with a float: float32 holds 8- and 16-bit integers exactly,
  // wider ones only inexactly, so NumPy goes to float64 for those.
  const ScalarType& i = ca == 1 ? ta : tb;
  const ScalarType& f = ca == 1 ? tb : ta;
  return i.bits() <= 16 ? f.kind : ScalarKind::Float64;
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
    case ScalarKind::Bool:
    case ScalarKind::Int8:
    case ScalarKind::UInt8: return 8;
    case ScalarKind::Int16:
    case ScalarKind::UInt16: return 16;
    case ScalarKind::Int32:
    case ScalarKind::UInt32:
    case ScalarKind::Float32: return 32;
    case ScalarKind::Int64:
    case ScalarKind::UInt64:
    case ScalarKind::Float64: return 64;
  }
  return 64;
}

std::string plait_dtype_name(ScalarKind k) {
  std::string name = "PLAIT_";
  for (const char* c = numpy_dtype_name(k); *c; ++c) name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  return name;
}

int64_t wrap_int(int64_t v, ScalarKind k) {
  switch (k) {
    case ScalarKind::Int8: return static_cast<int8_t>(v);
    case ScalarKind::Int16: return static_cast<int16_t>(v);
    case ScalarKind::Int32: return static_cast<int32_t>(v);
    case ScalarKind::UInt8: return static_cast<uint8_t>(v);
    case ScalarKind::UInt16: return static_cast<uint16_t>(v);
    case ScalarKind::UInt32: return static_cast<uint32_t>(v);
    case ScalarKind::Bool: return v != 0;
    default: return v;
  }
}

ScalarKind int_kind(int bits, bool is_unsigned) {
  switch (bits) {
    case 8: return is_unsigned ? ScalarKind::UInt8 : ScalarKind::Int8;
    case 16: return is_unsigned ? ScalarKind::UInt16 : ScalarKind::Int16;
    case 32: return is_unsigned ? ScalarKind::UInt32 : ScalarKind::Int32;
    default: return is_unsigned ? ScalarKind::UInt64 : ScalarKind::Int64;
  }
}

int64_t int_min(ScalarKind k) {
  ScalarType t{k, false};
  if (t.is_unsigned() || t.is_bool()) return 0;
  return t.bits() == 64 ? INT64_MIN : -(int64_t{1} << (t.bits() - 1));
}

int64_t int_max(ScalarKind k) {
  ScalarType t{k, false};
  if (t.is_bool()) return 1;
  const int value_bits = t.is_unsigned() ? t.bits() : t.bits() - 1;
  return value_bits >= 63 ? INT64_MAX : (int64_t{1} << value_bits) - 1;
}

std::string to_string(ScalarType t) {
  if (t.weak) {
    switch (category(t.kind)) {
      case 0: return "bool";
      case 1: return "int";
      default: return "float";
    }
  }
  if (t.is_bool()) return "b1";
  std::string name(1, t.is_float() ? 'f' : t.is_unsigned() ? 'u' : 'i');
  name += std::to_string(t.bits());
  return name;
}

const char* numpy_dtype_name(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return "bool";
    case ScalarKind::Int8: return "int8";
    case ScalarKind::Int16: return "int16";
    case ScalarKind::Int32: return "int32";
    case ScalarKind::Int64: return "int64";
    case ScalarKind::UInt8: return "uint8";
    case ScalarKind::UInt16: return "uint16";
    case ScalarKind::UInt32: return "uint32";
    case ScalarKind::UInt64: return "uint64";
    case ScalarKind::Float32: return "float32";
    case ScalarKind::Float64: return "float64";
  }
  return "?";
}

const char* c_type_name(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return "bool";
    case ScalarKind::Int8: return "int8_t";
    case ScalarKind::Int16: return "int16_t";
    case ScalarKind::Int32: return "int32_t";
    case ScalarKind::Int64: return "int64_t";
    case ScalarKind::UInt8: return "uint8_t";
    case ScalarKind::UInt16: return "uint16_t";
    case ScalarKind::UInt32: return "uint32_t";
    case ScalarKind::UInt64: return "uint64_t";
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

std::optional<ScalarType> exact_compare_type(ScalarType a, ScalarType b) {
  if (!a.is_int() || !b.is_int()) return promote(a, b);
  // A Python int is an int64 here; it compares with the strong value exactly
  // (NumPy 2 does not require it to fit the strong type for comparisons).
  auto as_int64 = [](ScalarType t) { return t.weak ? ScalarType::i64() : t; };
  ScalarType sa = as_int64(a), sb = as_int64(b);
  const bool mixed_64 = (sa.kind == ScalarKind::UInt64 && sb.is_signed_int()) ||
                        (sb.kind == ScalarKind::UInt64 && sa.is_signed_int());
  if (mixed_64) return std::nullopt;
  if (a.weak && b.weak) return ScalarType::py_int();
  return ScalarType{promote_ints(sa, sb), false};
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

std::string to_string(const SparseType& t) {
  return std::string(t.csc ? "csc" : "csr") + (t.matrix ? "_matrix[" : "[") + to_string(ScalarType{t.dtype, false}) +
         ", " + to_string(ScalarType{t.index, false}) + "]";
}

std::string to_string(const ValueType& t) {
  if (t.is_sparse()) return to_string(t.sparse);
  if (t.is_container()) {
    // "list[float]", "list[(int, f64)]", "dict[int, float]", "set[i64]"
    std::string items;
    for (size_t k = 0; k < t.items.size(); ++k) items += (k ? ", " : "") + to_string(t.items[k]);
    const char* kind = t.tag == ValueType::Tag::Dict ? "dict[" : t.tag == ValueType::Tag::Set ? "set[" : "list[";
    return kind + (t.tuple_items ? "(" + items + ")" : items) + "]";
  }
  return t.is_array() ? to_string(t.array) : to_string(t.scalar);
}

std::vector<ValueType> abi_types(const ValueType& t) {
  if (t.is_container()) {
    std::vector<ValueType> columns;
    for (ScalarType item : t.items) columns.push_back(ValueType::of(ArrayType{item.kind, 1, Layout::C}));
    return columns;
  }
  if (!t.is_sparse()) return {t};
  ArrayType values{t.sparse.dtype, 1, Layout::C};
  ArrayType index{t.sparse.index, 1, Layout::C};
  return {ValueType::of(values), ValueType::of(index), ValueType::of(index), ValueType::of(ScalarType::py_int())};
}

namespace {

ScalarType parse_scalar(const std::string& name, const std::string& whole) {
  static const struct {
    const char* name;
    ScalarType type;
  } kNames[] = {
      {"b1", ScalarType::b1()},       {"i8", ScalarType::i8()},         {"i16", ScalarType::i16()},
      {"i32", ScalarType::i32()},     {"i64", ScalarType::i64()},       {"u8", ScalarType::u8()},
      {"u16", ScalarType::u16()},     {"u32", ScalarType::u32()},       {"u64", ScalarType::u64()},
      {"f32", ScalarType::f32()},     {"f64", ScalarType::f64()},       {"bool", ScalarType::py_bool()},
      {"int", ScalarType::py_int()},  {"float", ScalarType::py_float()},
  };
  for (const auto& n : kNames)
    if (name == n.name) return n.type;
  throw std::invalid_argument("unknown type '" + name + "' in signature \"" + whole +
                              "\" (expected b1, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, bool, int or float)");
}

ValueType parse_sparse_type(const std::string& s, size_t bracket, const std::string& whole) {
  SparseType t;
  t.matrix = s.compare(0, bracket, "csr_matrix") == 0;
  std::string inside = s.substr(bracket + 1, s.size() - bracket - 2);
  size_t comma = inside.find(',');
  if (comma == std::string::npos)
    throw std::invalid_argument("a sparse type names its value and index types: \"csr[f64, i32]\", not \"" + s + "\"");
  ScalarType values = parse_scalar(inside.substr(0, comma), whole);
  ScalarType index = parse_scalar(inside.substr(comma + 1), whole);
  if (values.weak) throw std::invalid_argument("sparse values are b1, i8 ... u64, f32 or f64 in \"" + s + "\"");
  if (index.kind != ScalarKind::Int32 && index.kind != ScalarKind::Int64)
    throw std::invalid_argument("sparse indices are i32 or i64 in \"" + s + "\"");
  t.dtype = values.kind;
  t.index = index.kind;
  return ValueType::of(t);
}

ValueType parse_value_type(const std::string& item, const std::string& whole) {
  std::string s = strip_spaces(item);
  size_t bracket = s.find('[');
  if (bracket == std::string::npos) return ValueType::of(parse_scalar(s, whole));
  if (s.back() != ']') throw std::invalid_argument("missing ']' in \"" + item + "\"");
  const std::string head = s.substr(0, bracket);
  if (head == "csr" || head == "csr_matrix") return parse_sparse_type(s, bracket, whole);
  ScalarType elem = parse_scalar(s.substr(0, bracket), whole);
  if (elem.weak) throw std::invalid_argument("array element types are b1, i8, i16, i32, i64, u8, u16, u32, u64, f32 or f64, not '" + s.substr(0, bracket) + "'");
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

Signature Signature::abi() const {
  Signature out;
  for (const ValueType& t : args)
    for (const ValueType& part : abi_types(t)) out.args.push_back(part);
  return out;
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
