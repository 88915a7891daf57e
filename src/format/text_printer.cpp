#include "format/text_printer.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "base/dtype.hpp"

namespace onyx::pb {
namespace {

// TensorProto.DataType numbers this file switches on.
enum : int32_t {
  kFloat = 1, kUInt8 = 2, kInt8 = 3, kUInt16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kString = 8, kBool = 9,
  kFloat16 = 10, kDouble = 11, kUInt32 = 12, kUInt64 = 13, kBFloat16 = 16, kF8E4M3FN = 17, kF8E4M3FNUZ = 18,
  kF8E5M2 = 19, kF8E5M2FNUZ = 20, kF8E8M0 = 24,
};

constexpr int32_t kExternalLocation = 1;  // TensorProto.DataLocation.EXTERNAL

bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// A name the syntax accepts unquoted: a letter or '_', then letters, digits or '_'.
bool is_identifier(Str s) {
  if (s.empty()) return false;
  if (!is_ascii_alpha(s[0]) && s[0] != '_') return false;
  for (size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (!is_ascii_alpha(c) && !is_ascii_digit(c) && c != '_') return false;
  }
  return true;
}

// The parser's element type names; any value it has no name for prints as "undefined".
std::string_view elem_type_name(int32_t v) {
  if (v == 0 || !is_known_dtype(v)) return "undefined";
  return dtype_name(static_cast<DataType>(v));
}

std::string_view attr_type_name(int32_t v) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "undefined", "float",  "int",     "string",        "tensor",         "graph",      "floats",     "ints",
      "strings",   "tensors", "graphs", "sparse_tensor", "sparse_tensors", "type_proto", "type_protos",
  };
  if (v <= 0 || v >= static_cast<int32_t>(kNames.size())) return "undefined";
  return kNames[static_cast<size_t>(v)];
}

// Number of elements the dims imply, checked against the raw_data length: the two must agree exactly.
size_t raw_element_count(const Tensor& t, size_t element_size) {
  const Str name = t.name.value_or("");
  uint64_t count = 1;
  for (int64_t d : t.dims) {
    if (d < 0) fail("Negative dimension ", d, " for tensor: ", name);
    const auto ud = static_cast<uint64_t>(d);
    if (ud != 0 && count > std::numeric_limits<uint64_t>::max() / ud) fail("Dimension product overflows for tensor: ", name);
    count *= ud;
  }
  const size_t size = t.raw_data ? t.raw_data->size() : 0;
  if (size % element_size != 0 || size / element_size != count) {
    fail("Data size mismatch. Tensor: ", name, " has ", size, " bytes of raw_data for ", count,
         " elements of size ", element_size);
  }
  return static_cast<size_t>(count);
}

template <class T>
T load_little_endian(const char* p) {
  std::array<unsigned char, sizeof(T)> bytes;
  std::memcpy(bytes.data(), p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) std::reverse(bytes.begin(), bytes.end());
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

class Printer {
 public:
  std::string out;

  void model(const Model& m) {
    out += "<\n";
    key("ir_version");
    number(m.ir_version.value_or(0));
    next_key("opset_import");
    opsets(m.opset_import, ", ");
    if (m.producer_name) {
      next_key("producer_name");
      quoted(*m.producer_name);
    }
    if (m.producer_version) {
      next_key("producer_version");
      quoted(*m.producer_version);
    }
    if (m.domain) {
      next_key("domain");
      quoted(*m.domain);
    }
    if (m.model_version) {
      next_key("model_version");
      number(*m.model_version);
    }
    if (m.doc_string) {
      next_key("doc_string");
      quoted(*m.doc_string);
    }
    if (!m.metadata_props.empty()) {
      next_key("metadata_props");
      metadata(m.metadata_props);
    }
    out += "\n>\n";
    if (m.graph) {
      graph(*m.graph);
    } else {
      graph(Graph{});
    }
    for (const Function& f : m.functions) {
      out += '\n';
      function(f);
    }
  }

  void graph(const Graph& g) {
    id(g.name.value_or(""));
    out += ' ';
    value_infos(g.input);
    out += " => ";
    value_infos(g.output);
    out += ' ';
    if (!g.initializer.empty() || !g.value_info.empty()) {
      out += '\n';
      pad(indent_);
      out += '<';
      const char* sep = "";
      for (const Tensor& t : g.initializer) {
        out += sep;
        tensor(t, true);
        sep = ", ";
      }
      for (const ValueInfo& vi : g.value_info) {
        out += sep;
        value_info(vi);
        sep = ", ";
      }
      out += ">\n";
    }
    nodes(g.node);
  }

  void node(const Node& n) {
    pad(indent_);
    if (n.name) {
      out += '[';
      id(*n.name);
      out += "] ";
    }
    ids(n.output);
    out += " = ";
    const Str domain = n.domain.value_or("");
    if (!domain.empty()) {
      out += domain;
      out += '.';
    }
    out += n.op_type.value_or("");
    const Str overload = n.overload.value_or("");
    if (!overload.empty()) {
      out += ':';
      out += overload;
    }
    // Attributes go before the inputs, unless one of them holds a graph: then they follow the inputs.
    const bool has_subgraph = std::any_of(n.attribute.begin(), n.attribute.end(),
                                          [](const Attribute& a) { return a.g || !a.graphs.empty(); });
    if (!has_subgraph && !n.attribute.empty()) attributes(n.attribute);
    out += " (";
    ids(n.input);
    out += ')';
    if (has_subgraph && !n.attribute.empty()) attributes(n.attribute);
    out += '\n';
  }

 private:
  int indent_ = 3;

  // std::setw(n) << ' ': the character right-aligned in a field of n, so n spaces (at least one).
  void pad(int n) { out.append(static_cast<size_t>(std::max(n, 1)), ' '); }

  void key(std::string_view k) {
    pad(indent_);
    out += k;
    out += ": ";
  }
  void next_key(std::string_view k) {
    out += ",\n";
    key(k);
  }

  template <class T>
  void number(T v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) {
        out += std::signbit(v) ? "-nan" : "nan";
        return;
      }
    }
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out.append(buf.data(), res.ptr);
  }

  template <class T>
  void numbers(const char* open, const char* sep, const char* close, const std::vector<T>& v) {
    out += open;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += sep;
      number(v[i]);
    }
    out += close;
  }

  void quoted(Str s) {
    out += '"';
    for (char c : s) {
      if (c == '\\' || c == '"') out += '\\';
      out += c;
    }
    out += '"';
  }

  void id(Str s) {
    if (is_identifier(s)) {
      out += s;
    } else {
      quoted(s);
    }
  }

  void ids(const std::vector<Str>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      id(v[i]);
    }
  }

  // `[` sep-joined quoted strings `]`, written as onnx does: an empty list gives just the closer.
  void quoted_list(char open, char close, const std::vector<Str>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) {
        out += ", ";
      } else {
        out += open;
      }
      quoted(v[i]);
    }
    out += close;
  }

  void metadata(const Metadata& md) {
    out += '[';
    for (size_t i = 0; i < md.size(); ++i) {
      if (i) out += ", ";
      quoted(md[i].key.value_or(""));
      out += ": ";
      quoted(md[i].value.value_or(""));
    }
    out += ']';
  }

  void opsets(const std::vector<OperatorSetId>& v, const char* sep) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += sep;
      quoted(v[i].domain.value_or(""));
      out += " : ";
      number(v[i].version.value_or(0));
    }
    out += ']';
  }

  void dim(const Dimension& d) {
    if (d.dim_value) {
      number(*d.dim_value);
    } else if (d.dim_param) {
      id(*d.dim_param);
    } else {
      out += '?';
    }
  }

  void shape(const TensorShape& s) {
    out += '[';
    for (size_t i = 0; i < s.dim.size(); ++i) {
      if (i) out += ',';
      dim(s.dim[i]);
    }
    out += ']';
  }

  // An absent shape (unknown rank) prints as `[]`; a present shape of rank 0 prints nothing.
  void tensor_type(const TypeTensor& t) {
    out += elem_type_name(t.elem_type.value_or(0));
    if (t.shape) {
      if (!t.shape->dim.empty()) shape(*t.shape);
    } else {
      out += "[]";
    }
  }

  void boxed_type(const Box<Type>& b) {
    if (b) type(*b);
  }

  void type(const Type& t) {
    if (t.tensor_type) {
      tensor_type(*t.tensor_type);
    } else if (t.sequence_type) {
      out += "seq(";
      boxed_type(t.sequence_type->elem_type);
      out += ')';
    } else if (t.map_type) {
      out += "map(";
      out += elem_type_name(t.map_type->key_type.value_or(0));
      out += ", ";
      boxed_type(t.map_type->value_type);
      out += ')';
    } else if (t.optional_type) {
      out += "optional(";
      boxed_type(t.optional_type->elem_type);
      out += ')';
    } else if (t.sparse_tensor_type) {
      out += "sparse_tensor(";
      tensor_type(*t.sparse_tensor_type);
      out += ')';
    } else if (t.opaque_type) {
      out += "opaque(";
      const Str domain = t.opaque_type->domain.value_or("");
      const Str name = t.opaque_type->name.value_or("");
      if (!domain.empty()) {
        out += domain;
        out += ',';
      }
      out += name;
      out += ')';
    }
  }

  void value_info(const ValueInfo& vi) {
    if (vi.type) type(*vi.type);
    out += ' ';
    id(vi.name.value_or(""));
  }

  void value_infos(const std::vector<ValueInfo>& v) {
    out += '(';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      value_info(v[i]);
    }
    out += ')';
  }

  // raw_data decoded as little-endian Elem, printed ` {a,b,c}`.
  template <class Elem>
  void raw_values(const Tensor& t) {
    const size_t n = raw_element_count(t, sizeof(Elem));
    const char* p = t.raw_data->data();
    out += " {";
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      const Elem e = load_little_endian<Elem>(p + i * sizeof(Elem));
      if constexpr (std::is_floating_point_v<Elem>) {
        number(e);
      } else if constexpr (std::is_signed_v<Elem>) {
        number(static_cast<int64_t>(e));
      } else {
        number(static_cast<uint64_t>(e));
      }
    }
    out += '}';
  }

  void tensor(const Tensor& t, bool is_initializer) {
    const int32_t dt = t.data_type.value_or(0);
    out += elem_type_name(dt);
    if (!t.dims.empty()) numbers("[", ",", "]", t.dims);
    const Str name = t.name.value_or("");
    if (!name.empty()) {
      out += ' ';
      id(name);
    }
    if (is_initializer) out += " = ";
    if (t.data_location && *t.data_location == kExternalLocation) {
      metadata(t.external_data);
    } else if (t.raw_data) {
      switch (dt) {
        case kInt8: raw_values<int8_t>(t); break;
        case kUInt8:
        case kBool:
        case kF8E4M3FN:
        case kF8E4M3FNUZ:
        case kF8E5M2:
        case kF8E5M2FNUZ:
        case kF8E8M0: raw_values<uint8_t>(t); break;
        case kInt16: raw_values<int16_t>(t); break;
        case kUInt16:
        case kFloat16:
        case kBFloat16: raw_values<uint16_t>(t); break;
        case kInt32: raw_values<int32_t>(t); break;
        case kUInt32: raw_values<uint32_t>(t); break;
        case kInt64: raw_values<int64_t>(t); break;
        case kUInt64: raw_values<uint64_t>(t); break;
        case kFloat: raw_values<float>(t); break;
        case kDouble: raw_values<double>(t); break;
        default: out += "..."; break;  // packed sub-byte, complex, string
      }
    } else {
      switch (dt) {
        case kInt8:
        case kInt16:
        case kInt32:
        case kUInt8:
        case kUInt16:
        case kBool:
        case kFloat16:
        case kBFloat16:
        case kF8E4M3FN:
        case kF8E4M3FNUZ:
        case kF8E5M2:
        case kF8E5M2FNUZ:
        case kF8E8M0: numbers(" {", ",", "}", t.int32_data); break;
        case kInt64: numbers(" {", ",", "}", t.int64_data); break;
        case kUInt32:
        case kUInt64: numbers(" {", ",", "}", t.uint64_data); break;
        case kFloat: numbers(" {", ",", "}", t.float_data); break;
        case kDouble: numbers(" {", ",", "}", t.double_data); break;
        case kString: quoted_list('{', '}', t.string_data); break;
        default: out += "..."; break;
      }
    }
  }

  template <class T, class F>
  void bracketed(const std::vector<T>& v, F each) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      each(v[i]);
    }
    out += ']';
  }

  void attribute(const Attribute& a) {
    const int32_t ty = a.type.value_or(0);
    out += a.name.value_or("");
    out += ": ";
    out += attr_type_name(ty);
    if (a.ref_attr_name) {
      out += " = @";
      out += *a.ref_attr_name;
      return;
    }
    out += " = ";
    switch (static_cast<AttrType>(ty)) {
      case AttrType::Int: number(a.i.value_or(0)); break;
      case AttrType::Ints: numbers("[", ", ", "]", a.ints); break;
      case AttrType::Float: number(a.f.value_or(0.0f)); break;
      case AttrType::Floats: numbers("[", ", ", "]", a.floats); break;
      case AttrType::String: quoted(a.s.value_or("")); break;
      case AttrType::Strings: quoted_list('[', ']', a.strings); break;
      case AttrType::Graph:
        indent_ += 3;
        if (a.g) {
          graph(*a.g);
        } else {
          graph(Graph{});
        }
        indent_ -= 3;
        break;
      case AttrType::Graphs:
        indent_ += 3;
        bracketed(a.graphs, [this](const Graph& g) { graph(g); });
        indent_ -= 3;
        break;
      case AttrType::Tensor:
        if (a.t) {
          tensor(*a.t, false);
        } else {
          tensor(Tensor{}, false);
        }
        break;
      case AttrType::Tensors: bracketed(a.tensors, [this](const Tensor& t) { tensor(t, false); }); break;
      case AttrType::TypeProto:
        if (a.tp) type(*a.tp);
        break;
      case AttrType::TypeProtos: bracketed(a.type_protos, [this](const Type& t) { type(t); }); break;
      default: break;  // undefined and sparse tensors: nothing after "= "
    }
  }

  void attributes(const std::vector<Attribute>& v) {
    out += " <";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      attribute(v[i]);
    }
    out += '>';
  }

  // `{`, the node lines, then `}` indented one level less than the nodes (not at all at the top level).
  void nodes(const std::vector<Node>& v) {
    out += "{\n";
    for (const Node& n : v) node(n);
    if (indent_ > 3) pad(std::max(indent_ - 3, 3));
    out += '}';
  }

  void function(const Function& f) {
    out += "<\n  domain: ";
    quoted(f.domain.value_or(""));
    out += ",\n";
    const Str overload = f.overload.value_or("");
    if (!overload.empty()) {
      out += "  overload: ";
      quoted(overload);
      out += ",\n";
    }
    out += "  opset_import: ";
    opsets(f.opset_import, ",");
    out += "\n>\n";
    id(f.name.value_or(""));
    out += ' ';
    if (!f.attribute.empty()) {
      out += '<';
      for (size_t i = 0; i < f.attribute.size(); ++i) {
        if (i) out += ',';
        out += f.attribute[i];
      }
      out += '>';
    }
    out += '(';
    ids(f.input);
    out += ") => (";
    ids(f.output);
    out += ")\n";
    nodes(f.node);
  }
};

}  // namespace

std::string to_text(const Model& m) {
  Printer p;
  p.model(m);
  return std::move(p.out);
}

std::string to_text(const Graph& g) {
  Printer p;
  p.graph(g);
  return std::move(p.out);
}

std::string to_text(const Node& n) {
  Printer p;
  p.node(n);
  return std::move(p.out);
}

}  // namespace onyx::pb
