// Decoding of the onnx.proto / onnx-data.proto messages. Each message is one function; fields with the wrong wire
// type and unknown fields are kept verbatim in `unknown` (as protobuf does), so nothing is lost.
#include <cstring>

#include "format/mapped_file.hpp"
#include "format/onnx_proto.hpp"
#include "format/wire.hpp"

namespace onyx::pb {
namespace {

using wire::Reader;
using wire::WireType;

class Parser {
 public:
  Parser(std::string_view root, std::string_view what, const ParseLimits& limits)
      : root_(root.data()), what_(what), limits_(limits) {}

  // Runs `body(reader, field, type)` over the fields of one message; body returns false for a field it did not
  // consume, which is then kept as unknown.
  template <class Body>
  void fields(std::string_view bytes, const char* message, Unknown& unknown, Body&& body) {
    Reader r(bytes, what_, message, static_cast<uint64_t>(bytes.data() - root_));
    if (++depth_ > limits_.max_depth) r.error("messages nested deeper than ", limits_.max_depth, " levels");
    uint32_t f;
    WireType t;
    for (;;) {
      const char* start = r.pos();
      if (!r.tag(f, t)) break;
      if (t == wire::kEndGroup) r.error("unexpected end-group for field ", f);
      if (!body(r, f, t)) {
        r.skip(f, t);
        unknown.emplace_back(start, static_cast<size_t>(r.pos() - start));
      }
    }
    --depth_;
  }

  // Scalars. Each returns false when the wire type does not match the field's type.
  static bool get(Reader& r, WireType t, std::optional<int64_t>& v) {
    if (t != wire::kVarint) return false;
    v = static_cast<int64_t>(r.varint());
    return true;
  }
  static bool get(Reader& r, WireType t, std::optional<int32_t>& v) {
    if (t != wire::kVarint) return false;
    v = static_cast<int32_t>(static_cast<uint32_t>(r.varint()));
    return true;
  }
  static bool get(Reader& r, WireType t, std::optional<float>& v) {
    if (t != wire::kFixed32) return false;
    uint32_t u = r.fixed32();
    float f;
    std::memcpy(&f, &u, 4);
    v = f;
    return true;
  }
  static bool get(Reader& r, WireType t, OptStr& v) {
    if (t != wire::kLen) return false;
    v = r.bytes();
    return true;
  }
  static bool add(Reader& r, WireType t, std::vector<Str>& v) {
    if (t != wire::kLen) return false;
    v.push_back(r.bytes());
    return true;
  }
  // Repeated varints, packed or not; a packed run is counted first so the vector grows once.
  template <class T>
  static bool add_varints(Reader& r, WireType t, std::vector<T>& v) {
    if (t == wire::kVarint) {
      v.push_back(static_cast<T>(r.varint()));
      return true;
    }
    if (t != wire::kLen) return false;
    std::string_view run = r.bytes();
    size_t count = 0;
    for (char c : run) count += (static_cast<uint8_t>(c) & 0x80) == 0;
    v.reserve(v.size() + count);
    Reader sub(run, r.what(), "packed field", r.offset() - run.size());
    while (!sub.done()) v.push_back(static_cast<T>(sub.varint()));
    return true;
  }
  template <class T, class U>
  static bool add_fixed(Reader& r, WireType t, std::vector<T>& v) {
    static_assert(sizeof(T) == sizeof(U));
    constexpr WireType kOne = sizeof(T) == 4 ? wire::kFixed32 : wire::kFixed64;
    if (t == kOne) {
      U u = sizeof(T) == 4 ? static_cast<U>(r.fixed32()) : static_cast<U>(r.fixed64());
      T x;
      std::memcpy(&x, &u, sizeof(T));
      v.push_back(x);
      return true;
    }
    if (t != wire::kLen) return false;
    std::string_view run = r.bytes();
    if (run.size() % sizeof(T)) r.error("packed field of ", run.size(), " bytes is not a multiple of ", sizeof(T));
    size_t n = run.size() / sizeof(T), old = v.size();
    v.resize(old + n);
    if (n) std::memcpy(v.data() + old, run.data(), run.size());
    return true;
  }
  template <class M>
  bool sub(Reader& r, WireType t, std::optional<M>& m) {
    if (t != wire::kLen) return false;
    std::string_view b = r.bytes();
    if (!m) m.emplace();
    parse(b, *m);  // a repeated occurrence merges into the first, as protobuf does
    return true;
  }
  template <class M>
  bool sub(Reader& r, WireType t, Box<M>& m) {
    if (t != wire::kLen) return false;
    std::string_view b = r.bytes();
    if (!m) m.emplace();
    parse(b, *m);
    return true;
  }
  template <class M>
  bool add(Reader& r, WireType t, std::vector<M>& v) {
    if (t != wire::kLen) return false;
    std::string_view b = r.bytes();
    parse(b, v.emplace_back());
    return true;
  }

  void parse(std::string_view b, StringStringEntry& m) {
    fields(b, "StringStringEntryProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.key);
        case 2: return get(r, t, m.value);
      }
      return false;
    });
  }
  void parse(std::string_view b, OperatorSetId& m) {
    fields(b, "OperatorSetIdProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.domain);
        case 2: return get(r, t, m.version);
      }
      return false;
    });
  }
  void parse(std::string_view b, TensorSegment& m) {
    fields(b, "TensorProto.Segment", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.begin);
        case 2: return get(r, t, m.end);
      }
      return false;
    });
  }
  void parse(std::string_view b, Tensor& m) {
    fields(b, "TensorProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return add_varints(r, t, m.dims);
        case 2: return get(r, t, m.data_type);
        case 3: return sub(r, t, m.segment);
        case 4: return add_fixed<float, uint32_t>(r, t, m.float_data);
        case 5: return add_varints(r, t, m.int32_data);
        case 6: return add(r, t, m.string_data);
        case 7: return add_varints(r, t, m.int64_data);
        case 8: return get(r, t, m.name);
        case 9: return get(r, t, m.raw_data);
        case 10: return add_fixed<double, uint64_t>(r, t, m.double_data);
        case 11: return add_varints(r, t, m.uint64_data);
        case 12: return get(r, t, m.doc_string);
        case 13: return add(r, t, m.external_data);
        case 14: return get(r, t, m.data_location);
        case 16: return add(r, t, m.metadata_props);
      }
      return false;
    });
  }
  void parse(std::string_view b, SparseTensor& m) {
    fields(b, "SparseTensorProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return sub(r, t, m.values);
        case 2: return sub(r, t, m.indices);
        case 3: return add_varints(r, t, m.dims);
      }
      return false;
    });
  }
  void parse(std::string_view b, Dimension& m) {
    fields(b, "TensorShapeProto.Dimension", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1:
          if (t != wire::kVarint) return false;
          m.dim_param.reset();  // oneof
          return get(r, t, m.dim_value);
        case 2:
          if (t != wire::kLen) return false;
          m.dim_value.reset();
          return get(r, t, m.dim_param);
        case 3: return get(r, t, m.denotation);
      }
      return false;
    });
  }
  void parse(std::string_view b, TensorShape& m) {
    fields(b, "TensorShapeProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      return f == 1 && add(r, t, m.dim);
    });
  }
  void parse(std::string_view b, TypeTensor& m) {
    fields(b, "TypeProto.Tensor", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.elem_type);
        case 2: return sub(r, t, m.shape);
      }
      return false;
    });
  }
  void parse(std::string_view b, TypeElem& m) {
    fields(b, "TypeProto.Sequence", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      return f == 1 && sub(r, t, m.elem_type);
    });
  }
  void parse(std::string_view b, TypeMap& m) {
    fields(b, "TypeProto.Map", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.key_type);
        case 2: return sub(r, t, m.value_type);
      }
      return false;
    });
  }
  void parse(std::string_view b, TypeOpaque& m) {
    fields(b, "TypeProto.Opaque", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.domain);
        case 2: return get(r, t, m.name);
      }
      return false;
    });
  }
  // A oneof member: switching to another member clears the previous one; the same member merges.
  template <class M>
  bool oneof(Reader& r, WireType t, Type& m, std::optional<M>& member) {
    if (t != wire::kLen) return false;
    if (!member) m.clear_value();
    return sub(r, t, member);
  }
  void parse(std::string_view b, Type& m) {
    fields(b, "TypeProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return oneof(r, t, m, m.tensor_type);
        case 4: return oneof(r, t, m, m.sequence_type);
        case 5: return oneof(r, t, m, m.map_type);
        case 6: return get(r, t, m.denotation);
        case 7: return oneof(r, t, m, m.opaque_type);
        case 8: return oneof(r, t, m, m.sparse_tensor_type);
        case 9: return oneof(r, t, m, m.optional_type);
      }
      return false;
    });
  }
  void parse(std::string_view b, ValueInfo& m) {
    fields(b, "ValueInfoProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 2: return sub(r, t, m.type);
        case 3: return get(r, t, m.doc_string);
        case 4: return add(r, t, m.metadata_props);
      }
      return false;
    });
  }
  void parse(std::string_view b, Attribute& m) {
    fields(b, "AttributeProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 2: return get(r, t, m.f);
        case 3: return get(r, t, m.i);
        case 4: return get(r, t, m.s);
        case 5: return sub(r, t, m.t);
        case 6: return sub(r, t, m.g);
        case 7: return add_fixed<float, uint32_t>(r, t, m.floats);
        case 8: return add_varints(r, t, m.ints);
        case 9: return add(r, t, m.strings);
        case 10: return add(r, t, m.tensors);
        case 11: return add(r, t, m.graphs);
        case 13: return get(r, t, m.doc_string);
        case 14: return sub(r, t, m.tp);
        case 15: return add(r, t, m.type_protos);
        case 20: return get(r, t, m.type);
        case 21: return get(r, t, m.ref_attr_name);
        case 22: return sub(r, t, m.sparse_tensor);
        case 23: return add(r, t, m.sparse_tensors);
      }
      return false;
    });
  }
  void parse(std::string_view b, Node& m) {
    fields(b, "NodeProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return add(r, t, m.input);
        case 2: return add(r, t, m.output);
        case 3: return get(r, t, m.name);
        case 4: return get(r, t, m.op_type);
        case 5: return add(r, t, m.attribute);
        case 6: return get(r, t, m.doc_string);
        case 7: return get(r, t, m.domain);
        case 8: return get(r, t, m.overload);
        case 9: return add(r, t, m.metadata_props);
      }
      return false;
    });
  }
  void parse(std::string_view b, TensorAnnotation& m) {
    fields(b, "TensorAnnotation", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.tensor_name);
        case 2: return add(r, t, m.quant_parameter_tensor_names);
      }
      return false;
    });
  }
  void parse(std::string_view b, Graph& m) {
    fields(b, "GraphProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return add(r, t, m.node);
        case 2: return get(r, t, m.name);
        case 5: return add(r, t, m.initializer);
        case 10: return get(r, t, m.doc_string);
        case 11: return add(r, t, m.input);
        case 12: return add(r, t, m.output);
        case 13: return add(r, t, m.value_info);
        case 14: return add(r, t, m.quantization_annotation);
        case 15: return add(r, t, m.sparse_initializer);
        case 16: return add(r, t, m.metadata_props);
      }
      return false;
    });
  }
  void parse(std::string_view b, TrainingInfo& m) {
    fields(b, "TrainingInfoProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return sub(r, t, m.initialization);
        case 2: return sub(r, t, m.algorithm);
        case 3: return add(r, t, m.initialization_binding);
        case 4: return add(r, t, m.update_binding);
      }
      return false;
    });
  }
  void parse(std::string_view b, Function& m) {
    fields(b, "FunctionProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 4: return add(r, t, m.input);
        case 5: return add(r, t, m.output);
        case 6: return add(r, t, m.attribute);
        case 7: return add(r, t, m.node);
        case 8: return get(r, t, m.doc_string);
        case 9: return add(r, t, m.opset_import);
        case 10: return get(r, t, m.domain);
        case 11: return add(r, t, m.attribute_proto);
        case 12: return add(r, t, m.value_info);
        case 13: return get(r, t, m.overload);
        case 14: return add(r, t, m.metadata_props);
      }
      return false;
    });
  }
  void parse(std::string_view b, Model& m) {
    fields(b, "ModelProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.ir_version);
        case 2: return get(r, t, m.producer_name);
        case 3: return get(r, t, m.producer_version);
        case 4: return get(r, t, m.domain);
        case 5: return get(r, t, m.model_version);
        case 6: return get(r, t, m.doc_string);
        case 7: return sub(r, t, m.graph);
        case 8: return add(r, t, m.opset_import);
        case 14: return add(r, t, m.metadata_props);
        case 20: return add(r, t, m.training_info);
        case 25: return add(r, t, m.functions);
      }
      return false;
    });
  }
  void parse(std::string_view b, SequenceValue& m) {
    fields(b, "SequenceProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 2: return get(r, t, m.elem_type);
        case 3: return add(r, t, m.tensor_values);
        case 4: return add(r, t, m.sparse_tensor_values);
        case 5: return add(r, t, m.sequence_values);
        case 6: return add(r, t, m.map_values);
        case 7: return add(r, t, m.optional_values);
      }
      return false;
    });
  }
  void parse(std::string_view b, MapValue& m) {
    fields(b, "MapProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 2: return get(r, t, m.key_type);
        case 3: return add_varints(r, t, m.keys);
        case 4: return add(r, t, m.string_keys);
        case 5: return sub(r, t, m.values);
      }
      return false;
    });
  }
  void parse(std::string_view b, OptionalValue& m) {
    fields(b, "OptionalProto", m.unknown, [&](Reader& r, uint32_t f, WireType t) {
      switch (f) {
        case 1: return get(r, t, m.name);
        case 2: return get(r, t, m.elem_type);
        case 3: return sub(r, t, m.tensor_value);
        case 4: return sub(r, t, m.sparse_tensor_value);
        case 5: return sub(r, t, m.sequence_value);
        case 6: return sub(r, t, m.map_value);
        case 7: return sub(r, t, m.optional_value);
      }
      return false;
    });
  }

 private:
  const char* root_;
  std::string_view what_;
  ParseLimits limits_;
  int depth_ = 0;
};

template <class M>
M parse_root(std::string_view bytes, std::string_view what, const ParseLimits& limits) {
  M m;
  Parser(bytes, what, limits).parse(bytes, m);
  return m;
}

}  // namespace

void Type::clear_value() {
  tensor_type.reset();
  sequence_type.reset();
  map_type.reset();
  optional_type.reset();
  sparse_tensor_type.reset();
  opaque_type.reset();
}

Model parse_model(std::string_view b, std::string_view what, const ParseLimits& l) { return parse_root<Model>(b, what, l); }
Tensor parse_tensor(std::string_view b, std::string_view what, const ParseLimits& l) { return parse_root<Tensor>(b, what, l); }
SequenceValue parse_sequence(std::string_view b, std::string_view what, const ParseLimits& l) {
  return parse_root<SequenceValue>(b, what, l);
}
MapValue parse_map(std::string_view b, std::string_view what, const ParseLimits& l) { return parse_root<MapValue>(b, what, l); }
OptionalValue parse_optional(std::string_view b, std::string_view what, const ParseLimits& l) {
  return parse_root<OptionalValue>(b, what, l);
}

ModelDocument load_model_file(const std::filesystem::path& path, const ParseLimits& limits) {
  ModelDocument doc;
  doc.source = MappedFile::open(path);
  doc.label = path.string();
  doc.dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  doc.model = parse_model(doc.source->view(), doc.label, limits);
  return doc;
}

ModelDocument load_model_bytes(std::string bytes, std::string label, const ParseLimits& limits) {
  ModelDocument doc;
  doc.source = MappedFile::from_bytes(std::move(bytes));
  doc.label = std::move(label);
  doc.dir = ".";
  doc.model = parse_model(doc.source->view(), doc.label, limits);
  return doc;
}

}  // namespace onyx::pb
