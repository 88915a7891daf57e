#include "format/text_parser.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/dtype.hpp"
#include "base/error.hpp"
#include "onyx/parse.hpp"

namespace onyx::pb {
namespace {

// The onnx.proto numbers this file needs (TensorProto.DataType, TensorProto.DataLocation).
enum : int32_t {
  kTextFloat = 1, kTextUInt8 = 2, kTextInt8 = 3, kTextUInt16 = 4, kTextInt16 = 5, kTextInt32 = 6, kTextInt64 = 7,
  kTextString = 8, kTextBool = 9, kTextFloat16 = 10, kTextDouble = 11, kTextUInt32 = 12, kTextUInt64 = 13,
  kTextComplex64 = 14, kTextComplex128 = 15,
};
constexpr int32_t kTextExternalLocation = 1;

bool text_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool text_digit(char c) { return c >= '0' && c <= '9'; }
bool text_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Attribute type names as the printer writes them ("undefined" too, for an attribute without a type).
std::optional<AttrType> attr_type_from_name(std::string_view n) {
  static constexpr std::pair<std::string_view, AttrType> kNames[] = {
      {"undefined", AttrType::Undefined}, {"float", AttrType::Float},     {"int", AttrType::Int},
      {"string", AttrType::String},       {"tensor", AttrType::Tensor},   {"graph", AttrType::Graph},
      {"floats", AttrType::Floats},       {"ints", AttrType::Ints},       {"strings", AttrType::Strings},
      {"tensors", AttrType::Tensors},     {"graphs", AttrType::Graphs},   {"sparse_tensor", AttrType::SparseTensor},
      {"sparse_tensors", AttrType::SparseTensors}, {"type_proto", AttrType::TypeProto},
      {"type_protos", AttrType::TypeProtos},
  };
  for (const auto& [name, t] : kNames)
    if (name == n) return t;
  return std::nullopt;
}

// An element type name: the 26 names of dtype_name, or "undefined" (0), which the printer writes for a missing one.
std::optional<int32_t> elem_type_from_name(std::string_view n) {
  if (n == "undefined") return 0;
  if (auto t = dtype_from_name(n)) return static_cast<int32_t>(*t);
  return std::nullopt;
}

bool is_type_keyword(std::string_view id) {
  return elem_type_from_name(id) || id == "seq" || id == "map" || id == "optional" || id == "sparse_tensor" ||
         id == "opaque";
}

bool equals_lower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// A literal as onnx's parser reads it: a string, an integer or a float (digits with '.' or an exponent, or
// nan/inf/infinity, each with an optional '-').
struct TextLiteral {
  enum class Kind { Int, Float, String } kind = Kind::Int;
  Str text;   // the literal's characters; for strings the unescaped value
  size_t at = 0;
};

class TextSyntaxParser {
 public:
  TextSyntaxParser(Str text, std::string_view label, Arena& arena, const TextParseLimits& limits)
      : s_(text), label_(label), arena_(arena), max_depth_(limits.max_depth) {}

  Model model() {
    Model m;
    depth_ = 1;
    if (match('<')) {
      if (!match('>')) {
        do {
          const size_t at = here();
          const Str key = identifier("a model header key (ir_version, opset_import, producer_name, ...)");
          expect(':', cat("after '", key, "'"));
          if (key == "ir_version") {
            m.ir_version = int64_value("ir_version");
          } else if (key == "opset_import") {
            opsets(m.opset_import);
          } else if (key == "producer_name") {
            m.producer_name = string_value("producer_name");
          } else if (key == "producer_version") {
            m.producer_version = string_value("producer_version");
          } else if (key == "domain") {
            m.domain = string_value("domain");
          } else if (key == "model_version") {
            m.model_version = int64_value("model_version");
          } else if (key == "doc_string") {
            m.doc_string = string_value("doc_string");
          } else if (key == "metadata_props") {
            expect('[', "to open metadata_props");
            if (!match(']')) {
              string_pairs(m.metadata_props, "metadata_props");
              expect(']', "after the metadata_props entries");
            }
          } else {
            error_at(at, cat("unknown model header key '", key, "'"));
          }
        } while (match(','));
        expect('>', "after the model header");
      }
    }
    m.graph.emplace(graph());
    while (!at_end()) m.functions.push_back(function());
    return m;
  }

 private:
  Str s_;
  size_t pos_ = 0;
  std::string_view label_;
  Arena& arena_;
  int max_depth_;
  int depth_ = 0;

  // ---- Positions and errors ----

  size_t here() {
    skip_space();
    return pos_;
  }

  [[noreturn]] void error_at(size_t at, const std::string& what) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail(label_, ":", line, ":", col, ": ", what);
  }

  // What stands at `at`, for messages: a quoted token of at most 24 characters, or "the end of the text".
  std::string found_at(size_t at) {
    if (at >= s_.size()) return "the end of the text";
    size_t end = at;
    if (text_alpha(s_[at]) || text_digit(s_[at]) || s_[at] == '_' || s_[at] == '-') {
      ++end;
      while (end < s_.size() && end - at < 24 && (text_alpha(s_[end]) || text_digit(s_[end]) || s_[end] == '_' ||
                                                 s_[end] == '.'))
        ++end;
    } else {
      ++end;
    }
    std::string tok;
    for (size_t i = at; i < end; ++i) {
      const auto c = static_cast<unsigned char>(s_[i]);
      if (c < 0x20 || c >= 0x7f) {
        tok += cat("\\x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
      } else {
        tok += static_cast<char>(c);
      }
    }
    return "'" + tok + "'";
  }

  [[noreturn]] void expected(const std::string& what) {
    const size_t at = here();
    error_at(at, cat("expected ", what, ", found ", found_at(at)));
  }

  // Counts nested messages; past the limit the text is refused (and no recursion goes deeper).
  struct Nest {
    TextSyntaxParser& p;
    int n;
    Nest(TextSyntaxParser& parser, int levels) : p(parser), n(levels) {
      p.depth_ += n;
      if (p.depth_ > p.max_depth_)
        p.error_at(p.here(), cat("nesting deeper than ", p.max_depth_, " levels (graphs in attributes, types in types)"));
    }
    ~Nest() { p.depth_ -= n; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

  // ---- Characters and tokens ----

  // Skips white space and comments ('#' to the end of the line).
  void skip_space() {
    for (;;) {
      while (pos_ < s_.size() && text_space(s_[pos_])) ++pos_;
      if (pos_ >= s_.size() || s_[pos_] != '#') return;
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    }
  }

  bool at_end() { return here() >= s_.size(); }

  // The next character after white space, or 0 at the end (a NUL in the text matches nothing either).
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }

  bool match(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, const std::string& context) {
    if (!match(c)) expected(cat("'", c, "' ", context));
  }

  bool next_is_identifier() {
    const char c = peek();
    return text_alpha(c) || c == '_';
  }

  Str peek_identifier() {
    skip_space();
    size_t end = pos_;
    if (end < s_.size() && (text_alpha(s_[end]) || s_[end] == '_')) {
      ++end;
      while (end < s_.size() && (text_alpha(s_[end]) || text_digit(s_[end]) || s_[end] == '_')) ++end;
    }
    return s_.substr(pos_, end - pos_);
  }

  Str identifier(const std::string& what) {
    const Str id = peek_identifier();
    if (id.empty()) expected(what);
    pos_ += id.size();
    return id;
  }

  // A string literal: '"', characters where '\' takes the next one as it is, '"'. Views the text when nothing was
  // escaped.
  Str string_literal(const std::string& what) {
    if (peek() != '"') expected(what);
    const size_t start = pos_;
    ++pos_;
    bool escaped = false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        escaped = true;
        ++pos_;
        if (pos_ >= s_.size()) break;
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) error_at(start, "unterminated string literal (no closing '\"')");
    ++pos_;
    const Str inner = s_.substr(start + 1, pos_ - start - 2);
    if (!escaped) return inner;
    std::string out;
    out.reserve(inner.size());
    for (size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == '\\') ++i;
      out += inner[i];
    }
    return arena_.save(std::move(out));
  }

  // A name: an identifier, or a string literal for names that are not identifiers.
  Str quotable_id(const std::string& what) {
    if (peek() == '"') return string_literal(what);
    return identifier(what);
  }

  std::optional<Str> optional_quotable_id() {
    if (peek() == '"') return string_literal("a name");
    if (next_is_identifier()) return identifier("a name");
    return std::nullopt;
  }

  // Whether the next identifier is nan, inf or infinity (any case), which start float literals.
  bool next_is_float_word() {
    Str id = peek_identifier();
    return equals_lower(id, "nan") || equals_lower(id, "inf") || equals_lower(id, "infinity");
  }

  TextLiteral literal(const std::string& what) {
    TextLiteral lit;
    const char c = peek();
    lit.at = pos_;
    if (c == '"') {
      lit.kind = TextLiteral::Kind::String;
      lit.text = string_literal(what);
      return lit;
    }
    size_t p = pos_;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    if (p < s_.size() && text_alpha(s_[p])) {
      size_t end = p;
      while (end < s_.size() && text_alpha(s_[end])) ++end;
      const Str word = s_.substr(p, end - p);
      if (!equals_lower(word, "nan") && !equals_lower(word, "inf") && !equals_lower(word, "infinity")) expected(what);
      lit.kind = TextLiteral::Kind::Float;
      lit.text = s_.substr(pos_, end - pos_);
      pos_ = end;
      return lit;
    }
    if (p >= s_.size() || (!text_digit(s_[p]) && s_[p] != '.')) expected(what);
    bool is_float = false;
    size_t digits = 0;
    while (p < s_.size() && (text_digit(s_[p]) || s_[p] == '.')) {
      if (s_[p] == '.') {
        if (is_float) break;
        is_float = true;
      } else {
        ++digits;
      }
      ++p;
    }
    if (digits == 0) expected(what);
    if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
      is_float = true;
      ++p;
      if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
      if (p >= s_.size() || !text_digit(s_[p])) error_at(p, "expected the digits of an exponent");
      while (p < s_.size() && text_digit(s_[p])) ++p;
    }
    lit.kind = is_float ? TextLiteral::Kind::Float : TextLiteral::Kind::Int;
    lit.text = s_.substr(pos_, p - pos_);
    pos_ = p;
    return lit;
  }

  template <class Int>
  Int to_integer(const TextLiteral& lit, const std::string& what) {
    if (lit.kind != TextLiteral::Kind::Int) error_at(lit.at, cat("expected an integer for ", what, ", found '", lit.text, "'"));
    Str t = lit.text;
    if (!t.empty() && t[0] == '+') t.remove_prefix(1);
    Int v{};
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr != t.data() + t.size()) ||
        (ec == std::errc::invalid_argument && !t.empty() && t[0] == '-')) {
      error_at(lit.at, cat(what, ": ", lit.text, " is out of the range of ", std::is_signed_v<Int> ? "int" : "uint",
                           sizeof(Int) * 8));
    }
    if (ec != std::errc()) error_at(lit.at, cat("expected an integer for ", what, ", found '", lit.text, "'"));
    return v;
  }

  template <class Float>
  Float to_floating(const TextLiteral& lit, const std::string& what) {
    if (lit.kind == TextLiteral::Kind::String)
      error_at(lit.at, cat("expected a number for ", what, ", found a string"));
    Str t = lit.text;
    bool negative = false;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
      negative = t[0] == '-';
      t.remove_prefix(1);
    }
    Float v{};
    if (!t.empty() && text_alpha(t[0])) {
      v = equals_lower(t, "nan") ? std::numeric_limits<Float>::quiet_NaN() : std::numeric_limits<Float>::infinity();
    } else {
      const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec == std::errc::result_out_of_range) {
        // Underflow rounds to zero; overflow is an error, as in onnx's parser (std::stof).
        const double d = std::strtod(std::string(t).c_str(), nullptr);
        if (std::isinf(d) || std::fabs(d) >= 1.0)
          error_at(lit.at, cat(what, ": ", lit.text, " is out of the range of ", sizeof(Float) == 4 ? "float" : "double"));
        v = static_cast<Float>(d);
      } else if (ec != std::errc() || ptr != t.data() + t.size()) {
        error_at(lit.at, cat("expected a number for ", what, ", found '", lit.text, "'"));
      }
    }
    return negative ? -v : v;
  }

  int64_t int64_value(const std::string& what) { return to_integer<int64_t>(literal("an integer for " + what), what); }

  Str string_value(const std::string& what) { return string_literal("a string for " + what); }

  // `"domain" : version, ...` in brackets.
  void opsets(std::vector<OperatorSetId>& out) {
    expect('[', "to open the opset_import list");
    if (match(']')) return;
    do {
      OperatorSetId o;
      o.domain = string_literal("a quoted opset domain");
      expect(':', "after the opset domain");
      o.version = int64_value("the opset version");
      out.push_back(std::move(o));
    } while (match(','));
    expect(']', "after the opset_import entries");
  }

  // `"key": "value", ...` (metadata_props, external data entries).
  void string_pairs(Metadata& out, const std::string& what) {
    do {
      StringStringEntry e;
      e.key = string_literal("a quoted key in " + what);
      expect(':', "after the key in " + what);
      e.value = string_literal("a quoted value in " + what);
      out.push_back(std::move(e));
    } while (match(','));
  }

  // ---- Types ----

  bool next_is_type() { return is_type_keyword(peek_identifier()); }

  // `[` dims `]` after an element type: none is rank 0, `[]` unknown rank.
  void tensor_shape(TypeTensor& tt) {
    // `[` opens the dimensions, unless a rank-0 tensor's external data entries follow (`float ["location": ...]`).
    if (peek() != '[' || external_entries_follow()) {
      tt.shape.emplace();
      return;
    }
    ++pos_;
    if (match(']')) return;
    TensorShape& shape = tt.shape.emplace();
    do {
      Dimension d;
      if (match('?')) {
        // unknown dimension: neither value nor parameter
      } else if (peek() == '"' || next_is_identifier()) {
        d.dim_param = quotable_id("a dimension");
      } else {
        d.dim_value = to_integer<int64_t>(literal("a dimension (a number, a name or '?')"), "a dimension");
      }
      shape.dim.push_back(std::move(d));
    } while (match(','));
    expect(']', "after the dimensions");
  }

  // At '[': whether `"key":` follows (external data entries) rather than dimensions.
  bool external_entries_follow() {
    const size_t save = pos_;
    ++pos_;
    bool entries = false;
    if (peek() == '"') {
      string_literal("a string");
      entries = peek() == ':';
    }
    pos_ = save;
    return entries;
  }

  int32_t elem_type(const std::string& what) {
    const size_t at = here();
    const Str id = identifier(what);
    auto t = elem_type_from_name(id);
    if (!t) error_at(at, cat("expected ", what, ", found '", id, "'"));
    return *t;
  }

  // `seq(...)`, `optional(...)`, `map(k, ...)` may hold no type (the printer writes them so when none is set).
  void boxed_type(Box<Type>& b, const std::string& context) {
    if (peek() == ')' || peek() == ',') return;
    if (!next_is_type()) expected("a type " + context);
    b.emplace() = type();
  }

  Type type() {
    Nest nest(*this, 2);
    Type t;
    const size_t at = here();
    const Str id = identifier("a type");
    if (auto et = elem_type_from_name(id)) {
      TypeTensor& tt = t.tensor_type.emplace();
      tt.elem_type = *et;
      tensor_shape(tt);
    } else if (id == "seq" || id == "optional") {
      expect('(', cat("after '", id, "'"));
      TypeElem& e = id == "seq" ? t.sequence_type.emplace() : t.optional_type.emplace();
      boxed_type(e.elem_type, cat("in ", id, "(...)"));
      expect(')', cat("to close ", id, "("));
    } else if (id == "map") {
      expect('(', "after 'map'");
      TypeMap& m = t.map_type.emplace();
      m.key_type = elem_type("a map key type (an element type)");
      expect(',', "after the map key type");
      boxed_type(m.value_type, "for the map values");
      expect(')', "to close map(");
    } else if (id == "sparse_tensor") {
      expect('(', "after 'sparse_tensor'");
      TypeTensor& tt = t.sparse_tensor_type.emplace();
      tt.elem_type = elem_type("an element type in sparse_tensor(...)");
      tensor_shape(tt);
      expect(')', "to close sparse_tensor(");
    } else if (id == "opaque") {
      // `opaque(domain,name)` or `opaque(name)`, written as they are (the printer does not quote them).
      expect('(', "after 'opaque'");
      const size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] != ')') ++pos_;
      if (pos_ >= s_.size()) error_at(start, "unterminated opaque(...) type (no closing ')')");
      const Str inner = s_.substr(start, pos_ - start);
      ++pos_;
      TypeOpaque& o = t.opaque_type.emplace();
      const size_t comma = inner.find(',');
      const Str domain = comma == Str::npos ? Str() : inner.substr(0, comma);
      const Str name = comma == Str::npos ? inner : inner.substr(comma + 1);
      if (!domain.empty()) o.domain = domain;
      if (!name.empty()) o.name = name;
    } else {
      error_at(at, cat("expected a type (an element type, seq, map, optional, sparse_tensor or opaque), found '", id,
                       "'"));
    }
    return t;
  }

  // `[type] name`; the name may be left out only where `name_optional` (an unnamed initializer before '=').
  ValueInfo value_info(bool name_optional = false) {
    ValueInfo vi;
    if (next_is_type()) vi.type = type();
    if (name_optional && peek() == '=') return vi;
    vi.name = quotable_id("a value name");
    return vi;
  }

  // ---- Tensors ----

  // The values after a tensor's type (and name): `{...}`, `[external data entries]`, `...` (values the printer
  // cannot write) or nothing.
  void tensor_data(Tensor& t, const Type& type, size_t type_at) {
    if (!type.tensor_type) error_at(type_at, "a tensor needs a tensor type (an element type with dimensions)");
    const TypeTensor& tt = *type.tensor_type;
    const int32_t dt = tt.elem_type.value_or(0);
    t.data_type = dt;
    if (!tt.shape) error_at(type_at, "a tensor needs known dimensions: write none for a scalar, not '[]'");
    for (const Dimension& d : tt.shape->dim) {
      if (!d.dim_value) error_at(type_at, "a tensor's dimensions must be numbers");
      t.dims.push_back(*d.dim_value);
    }
    const std::string what = cat("a value of element type ", dt == 0 ? std::string("undefined") : std::string(dtype_name(static_cast<DataType>(dt))));
    const char c = peek();
    if (c == '{') {
      ++pos_;
      if (match('}')) return;
      do {
        value(t, dt, what);
      } while (match(','));
      expect('}', "after the tensor's values");
    } else if (c == '}' && dt == kTextString) {
      ++pos_;  // the printer writes an empty list of strings as its closer alone
    } else if (c == '[') {
      ++pos_;
      t.data_location = kTextExternalLocation;
      if (!match(']')) {
        string_pairs(t.external_data, "the external data entries");
        expect(']', "after the external data entries");
      }
    } else if (c == '.' && s_.substr(pos_, 3) == "...") {
      pos_ += 3;
    }
  }

  void value(Tensor& t, int32_t dt, const std::string& what) {
    switch (dt) {
      case kTextInt64: t.int64_data.push_back(to_integer<int64_t>(literal(what), what)); break;
      case kTextUInt32:
      case kTextUInt64: t.uint64_data.push_back(to_integer<uint64_t>(literal(what), what)); break;
      case kTextFloat:
      case kTextComplex64: t.float_data.push_back(to_floating<float>(literal(what), what)); break;
      case kTextDouble:
      case kTextComplex128: t.double_data.push_back(to_floating<double>(literal(what), what)); break;
      case kTextString: t.string_data.push_back(string_literal(what)); break;
      case 0: expected("no values for a tensor of element type undefined"); break;
      default: t.int32_data.push_back(to_integer<int32_t>(literal(what), what)); break;
    }
  }

  // A tensor where one is a value (attributes): `type [name] [=] data`.
  Tensor tensor_literal() {
    const size_t at = here();
    if (!next_is_type()) expected("a tensor (an element type, dimensions and values)");
    const Type ty = type();
    Tensor t;
    if (auto name = optional_quotable_id()) t.name = *name;
    match('=');
    tensor_data(t, ty, at);
    return t;
  }

  // ---- Attributes ----

  // The value of an attribute declared `name: type =`.
  void typed_attribute_value(Attribute& a, AttrType kind) {
    const auto list = [&](auto each, const char* what) {
      expect('[', cat("to open the list of ", what));
      if (match(']')) return;
      do {
        each();
      } while (match(','));
      expect(']', cat("after the ", what));
    };
    switch (kind) {
      case AttrType::Undefined:
      case AttrType::SparseTensor:
      case AttrType::SparseTensors:
        // The printer writes nothing after '=' for these; the text has no syntax for sparse tensor values.
        if (peek() != ',' && peek() != '>')
          expected(cat("',' or '>' after attribute '", a.name.value_or(""),
                       "' (the text syntax has no values for undefined or sparse tensor attributes)"));
        break;
      case AttrType::Int: a.i = int64_value("attribute '" + std::string(a.name.value_or("")) + "'"); break;
      case AttrType::Float: a.f = to_floating<float>(literal("a number"), "a float attribute"); break;
      case AttrType::String: a.s = string_literal("a string"); break;
      case AttrType::Tensor: a.t = tensor_literal(); break;
      case AttrType::Graph: a.g.emplace() = graph(); break;
      case AttrType::TypeProto:
        if (next_is_type()) a.tp = type();
        break;
      case AttrType::Ints:
        list([&] { a.ints.push_back(int64_value("an ints attribute")); }, "integers");
        break;
      case AttrType::Floats:
        list([&] { a.floats.push_back(to_floating<float>(literal("a number"), "a floats attribute")); }, "floats");
        break;
      case AttrType::Strings:
        if (peek() == ']') {
          ++pos_;  // the printer writes an empty list of strings as its closer alone
          break;
        }
        list([&] { a.strings.push_back(string_literal("a string")); }, "strings");
        break;
      case AttrType::Tensors: list([&] { a.tensors.push_back(tensor_literal()); }, "tensors"); break;
      case AttrType::Graphs: list([&] { a.graphs.push_back(graph()); }, "graphs"); break;
      case AttrType::TypeProtos: list([&] { a.type_protos.push_back(type()); }, "types"); break;
    }
  }

  // One value of an attribute without a type annotation; sets a.type from what it finds (onnx's rules).
  void inferred_single(Attribute& a) {
    if (next_is_identifier()) {
      if (next_is_type()) {
        const size_t at = here();
        const Type ty = type();
        const char c = peek();
        if (c == '{' || c == '=' || c == '"' || c == '[' || next_is_identifier()) {
          a.type = static_cast<int32_t>(AttrType::Tensor);
          Tensor& t = a.t.emplace();
          if (auto name = optional_quotable_id()) t.name = *name;
          match('=');
          tensor_data(t, ty, at);
        } else {
          a.type = static_cast<int32_t>(AttrType::TypeProto);
          a.tp = ty;
        }
      } else if (next_is_float_word()) {
        a.type = static_cast<int32_t>(AttrType::Float);
        a.f = to_floating<float>(literal("a number"), "a float attribute");
      } else {
        a.type = static_cast<int32_t>(AttrType::Graph);
        a.g.emplace() = graph();
      }
      return;
    }
    const TextLiteral lit = literal("an attribute value (a number, a string, a tensor, a type or a graph)");
    switch (lit.kind) {
      case TextLiteral::Kind::Int:
        a.type = static_cast<int32_t>(AttrType::Int);
        a.i = to_integer<int64_t>(lit, "an int attribute");
        break;
      case TextLiteral::Kind::Float:
        a.type = static_cast<int32_t>(AttrType::Float);
        a.f = to_floating<float>(lit, "a float attribute");
        break;
      case TextLiteral::Kind::String:
        a.type = static_cast<int32_t>(AttrType::String);
        a.s = lit.text;
        break;
    }
  }

  // An attribute without a type annotation: one value, or a list whose elements all have one kind (integers
  // among floats become floats).
  void inferred_attribute_value(Attribute& a) {
    if (!match('[')) {
      inferred_single(a);
      return;
    }
    if (peek() == ']') expected(cat("a value: an empty list needs its type, as in '", a.name.value_or(""), ": ints = []'"));
    std::optional<AttrType> kind;
    do {
      const size_t at = here();
      Attribute one;
      inferred_single(one);
      AttrType k = static_cast<AttrType>(*one.type);
      if (kind && *kind != k) {
        if ((*kind == AttrType::Float && k == AttrType::Int) || (*kind == AttrType::Int && k == AttrType::Float)) {
          k = AttrType::Float;
        } else {
          error_at(at, "the elements of a list attribute must all have one type");
        }
      }
      if (k == AttrType::Float && kind == AttrType::Int) {
        for (int64_t i : a.ints) a.floats.push_back(static_cast<float>(i));
        a.ints.clear();
      }
      kind = k;
      switch (static_cast<AttrType>(*one.type)) {
        case AttrType::Int:
          if (k == AttrType::Float) {
            a.floats.push_back(static_cast<float>(*one.i));
          } else {
            a.ints.push_back(*one.i);
          }
          break;
        case AttrType::Float: a.floats.push_back(*one.f); break;
        case AttrType::String: a.strings.push_back(*one.s); break;
        case AttrType::Tensor: a.tensors.push_back(std::move(*one.t)); break;
        case AttrType::Graph: a.graphs.push_back(std::move(*one.g)); break;
        case AttrType::TypeProto: a.type_protos.push_back(std::move(*one.tp)); break;
        default: break;
      }
    } while (match(','));
    expect(']', "after the list's values");
    switch (*kind) {
      case AttrType::Int: a.type = static_cast<int32_t>(AttrType::Ints); break;
      case AttrType::Float: a.type = static_cast<int32_t>(AttrType::Floats); break;
      case AttrType::String: a.type = static_cast<int32_t>(AttrType::Strings); break;
      case AttrType::Tensor: a.type = static_cast<int32_t>(AttrType::Tensors); break;
      case AttrType::Graph: a.type = static_cast<int32_t>(AttrType::Graphs); break;
      default: a.type = static_cast<int32_t>(AttrType::TypeProtos); break;
    }
  }

  // After the attribute's name: `[: type] = value` or `[: type] = @ref`.
  Attribute attribute_rest(Str name) {
    Nest nest(*this, 1);
    Attribute a;
    a.name = name;
    std::optional<AttrType> annotated;
    if (match(':')) {
      const size_t at = here();
      const Str tn = identifier("an attribute type (int, float, string, tensor, graph, ints, ...)");
      annotated = attr_type_from_name(tn);
      if (!annotated) error_at(at, cat("unknown attribute type '", tn, "'"));
      a.type = static_cast<int32_t>(*annotated);
    }
    expect('=', cat("after attribute '", name, "'"));
    if (match('@')) {
      a.ref_attr_name = quotable_id("the name of the referenced attribute");
      return a;
    }
    if (annotated) {
      typed_attribute_value(a, *annotated);
    } else {
      inferred_attribute_value(a);
    }
    return a;
  }

  void attributes(std::vector<Attribute>& out) {
    if (match('>')) return;
    do {
      const Str name = quotable_id("an attribute name");
      out.push_back(attribute_rest(name));
    } while (match(','));
    expect('>', "after the attributes");
  }

  // ---- Nodes, graphs, functions ----

  // Names separated by commas, any of them empty (`""` or nothing before a comma), as onnx's IdList: `(,x)` is
  // two names, `(x,)` one.
  std::optional<Str> list_id() {
    if (peek() == '"') return string_literal("a name");
    if (next_is_identifier()) return identifier("a name");
    if (peek() == ',') return Str();
    return std::nullopt;
  }

  void id_list(std::vector<Str>& out) {
    auto id = list_id();
    if (!id) return;
    out.push_back(*id);
    while (match(',')) {
      id = list_id();
      if (!id) break;
      out.push_back(*id);
    }
  }

  Node node() {
    Node n;
    if (match('[')) {
      n.name = optional_quotable_id().value_or(Str());
      expect(']', "after the node name");
    }
    id_list(n.output);
    expect('=', "after the outputs of a node");
    // domain.parts.OpType
    const size_t at = here();
    Str op = identifier("an operator name");
    size_t domain_end = 0;
    while (match('.')) {
      domain_end = pos_ - 1;
      op = identifier("an operator name after the domain");
    }
    if (domain_end) n.domain = s_.substr(at, domain_end - at);
    n.op_type = op;
    if (match(':')) n.overload = identifier("an overload name after ':'");
    const std::string what = cat("node '", n.name ? *n.name : op, "'");
    if (match('<')) attributes(n.attribute);
    expect('(', "before the inputs of " + what);
    id_list(n.input);
    expect(')', "after the inputs of " + what);
    if (n.attribute.empty() && match('<')) attributes(n.attribute);
    return n;
  }

  void nodes(std::vector<Node>& out) {
    expect('{', "to open the list of nodes");
    while (!match('}')) {
      if (at_end()) expected("a node or '}'");
      out.push_back(node());
    }
  }

  void arrow(const std::string& context) {
    expect('=', "=> " + context);
    if (pos_ >= s_.size() || s_[pos_] != '>') expected("'>' of '=>' " + context);
    ++pos_;
  }

  Graph graph() {
    Nest nest(*this, 3);
    Graph g;
    g.name = quotable_id("a graph name");
    const std::string what = cat("graph '", *g.name, "'");
    expect('(', "before the inputs of " + what);
    if (!match(')')) {
      do {
        const size_t at = here();
        ValueInfo vi = value_info();
        if (match('=')) {
          Tensor& t = g.initializer.emplace_back();
          t.name = vi.name;
          tensor_data(t, vi.type ? *vi.type : Type{}, at);
        }
        g.input.push_back(std::move(vi));
      } while (match(','));
      expect(')', "after the inputs of " + what);
    }
    arrow("after the inputs of " + what);
    expect('(', "before the outputs of " + what);
    if (!match(')')) {
      do {
        g.output.push_back(value_info());
      } while (match(','));
      expect(')', "after the outputs of " + what);
    }
    if (match('<') && !match('>')) {
      do {
        const size_t at = here();
        ValueInfo vi = value_info(true);
        if (match('=')) {
          Tensor& t = g.initializer.emplace_back();
          t.name = vi.name.value_or(Str());
          tensor_data(t, vi.type ? *vi.type : Type{}, at);
        } else {
          if (!vi.name) expected("a value name");
          g.value_info.push_back(std::move(vi));
        }
      } while (match(','));
      expect('>', "after the initializers and value_info of " + what);
    }
    nodes(g.node);
    return g;
  }

  // `(name, type name, ...)`: function inputs or outputs; typed ones also go to value_info.
  void function_values(std::vector<Str>& names, std::vector<ValueInfo>& infos, const std::string& context) {
    expect('(', "before the " + context);
    if (match(')')) return;
    do {
      ValueInfo vi = value_info();
      names.push_back(*vi.name);
      if (vi.type) infos.push_back(std::move(vi));
    } while (match(','));
    expect(')', "after the " + context);
  }

  Function function() {
    Function f;
    if (match('<') && !match('>')) {
      do {
        const size_t at = here();
        const Str key = identifier("a function header key (domain, opset_import, overload, doc_string)");
        expect(':', cat("after '", key, "'"));
        if (key == "domain") {
          f.domain = string_value("domain");
        } else if (key == "overload") {
          f.overload = string_value("overload");
        } else if (key == "opset_import") {
          opsets(f.opset_import);
        } else if (key == "doc_string") {
          f.doc_string = string_value("doc_string");
        } else {
          error_at(at, cat("unknown function header key '", key, "'"));
        }
      } while (match(','));
      expect('>', "after the function header");
    }
    f.name = quotable_id("a function name");
    const std::string what = cat("function '", *f.name, "'");
    if (match('<') && !match('>')) {
      do {
        const Str name = quotable_id("an attribute name");
        if (peek() == ':' || peek() == '=') {
          f.attribute_proto.push_back(attribute_rest(name));
        } else {
          f.attribute.push_back(name);
        }
      } while (match(','));
      expect('>', "after the attributes of " + what);
    }
    function_values(f.input, f.value_info, "inputs of " + what);
    arrow("after the inputs of " + what);
    function_values(f.output, f.value_info, "outputs of " + what);
    if (match('<') && !match('>')) {
      do {
        f.value_info.push_back(value_info());
      } while (match(','));
      expect('>', "after the value_info of " + what);
    }
    nodes(f.node);
    return f;
  }
};

}  // namespace

ModelDocument parse_model_text(std::string_view text, std::string_view label, const TextParseLimits& limits) {
  ModelDocument doc;
  doc.label = std::string(label);
  const Str kept = doc.arena->save(std::string(text));
  TextSyntaxParser parser(kept, label, *doc.arena, limits);
  doc.model = parser.model();
  return doc;
}

}  // namespace onyx::pb

namespace onyx {

std::string parse_model_text(std::string_view text, std::string_view source_name) {
  const pb::ModelDocument doc = pb::parse_model_text(text, source_name);
  return pb::serialize_model(doc.model);
}

void parse_model_text_file(const std::filesystem::path& text_path, const std::filesystem::path& model_path) {
  std::ifstream in(text_path, std::ios::binary);
  if (!in) fail(text_path.string(), ": cannot open the file");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) fail(text_path.string(), ": cannot read the file");
  const pb::ModelDocument doc = pb::parse_model_text(buf.str(), text_path.string());
  pb::write_model_file(doc.model, model_path);
}

}  // namespace onyx
