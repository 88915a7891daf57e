// Encoding of the onnx.proto / onnx-data.proto messages. Packed encoding is used exactly where onnx.proto
// declares [packed = true] (TensorProto's typed data fields), so the output matches what protobuf writes.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "format/onnx_proto.hpp"
#include "format/wire.hpp"

namespace onyx::pb {
namespace {

using wire::Sink;

void put(Sink& s, uint32_t f, const std::optional<int64_t>& v) {
  if (v) {
    s.key(f, wire::kVarint);
    s.varint(static_cast<uint64_t>(*v));
  }
}
void put(Sink& s, uint32_t f, const std::optional<int32_t>& v) {
  // Negative int32 values are sign-extended to 64 bits on the wire.
  if (v) put(s, f, std::optional<int64_t>(*v));
}
void put(Sink& s, uint32_t f, const std::optional<float>& v) {
  if (v) {
    uint32_t u;
    std::memcpy(&u, &*v, 4);
    s.key(f, wire::kFixed32);
    s.fixed32(u);
  }
}
void put(Sink& s, uint32_t f, const OptStr& v) {
  if (v) s.bytes_field(f, *v);
}
void put(Sink& s, uint32_t f, const std::vector<Str>& v) {
  for (auto x : v) s.bytes_field(f, x);
}
template <class T>
void put_unpacked_varints(Sink& s, uint32_t f, const std::vector<T>& v) {
  for (T x : v) {
    s.key(f, wire::kVarint);
    s.varint(static_cast<uint64_t>(static_cast<int64_t>(x)));
  }
}
template <class T>
void put_packed_varints(Sink& s, uint32_t f, const std::vector<T>& v) {
  if (v.empty()) return;
  Sink run;
  for (T x : v) run.varint(static_cast<uint64_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(x)));
  s.message_field(f, std::move(run));
}
template <class T>
void put_packed_fixed(Sink& s, uint32_t f, const std::vector<T>& v) {
  if (v.empty()) return;
  s.bytes_field(f, std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}
void put_unpacked_floats(Sink& s, uint32_t f, const std::vector<float>& v) {
  for (float x : v) put(s, f, std::optional<float>(x));
}
void put_unknown(Sink& s, const Unknown& u) {
  for (auto b : u) s.raw(b);
}

void encode(Sink& s, const StringStringEntry& m);
void encode(Sink& s, const OperatorSetId& m);
void encode(Sink& s, const TensorSegment& m);
void encode(Sink& s, const Tensor& m);
void encode(Sink& s, const SparseTensor& m);
void encode(Sink& s, const Dimension& m);
void encode(Sink& s, const TensorShape& m);
void encode(Sink& s, const TypeTensor& m);
void encode(Sink& s, const TypeElem& m);
void encode(Sink& s, const TypeMap& m);
void encode(Sink& s, const TypeOpaque& m);
void encode(Sink& s, const Type& m);
void encode(Sink& s, const ValueInfo& m);
void encode(Sink& s, const Attribute& m);
void encode(Sink& s, const Node& m);
void encode(Sink& s, const TensorAnnotation& m);
void encode(Sink& s, const Graph& m);
void encode(Sink& s, const TrainingInfo& m);
void encode(Sink& s, const Function& m);
void encode(Sink& s, const Model& m);
void encode(Sink& s, const SequenceValue& m);
void encode(Sink& s, const MapValue& m);
void encode(Sink& s, const OptionalValue& m);

template <class M>
void put_msg(Sink& s, uint32_t f, const M& m) {
  Sink child;
  encode(child, m);
  s.message_field(f, std::move(child));
}
template <class M>
void put(Sink& s, uint32_t f, const std::optional<M>& m) {
  if (m) put_msg(s, f, *m);
}
template <class M>
void put(Sink& s, uint32_t f, const Box<M>& m) {
  if (m) put_msg(s, f, *m);
}
template <class M>
void put(Sink& s, uint32_t f, const std::vector<M>& v) {
  for (const auto& m : v) put_msg(s, f, m);
}

void encode(Sink& s, const StringStringEntry& m) {
  put(s, 1, m.key);
  put(s, 2, m.value);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const OperatorSetId& m) {
  put(s, 1, m.domain);
  put(s, 2, m.version);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TensorSegment& m) {
  put(s, 1, m.begin);
  put(s, 2, m.end);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Tensor& m) {
  put_unpacked_varints(s, 1, m.dims);
  put(s, 2, m.data_type);
  put(s, 3, m.segment);
  put_packed_fixed(s, 4, m.float_data);
  put_packed_varints(s, 5, m.int32_data);
  put(s, 6, m.string_data);
  put_packed_varints(s, 7, m.int64_data);
  put(s, 8, m.name);
  put(s, 9, m.raw_data);
  put_packed_fixed(s, 10, m.double_data);
  put_packed_varints(s, 11, m.uint64_data);
  put(s, 12, m.doc_string);
  put(s, 13, m.external_data);
  put(s, 14, m.data_location);
  put(s, 16, m.metadata_props);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const SparseTensor& m) {
  put(s, 1, m.values);
  put(s, 2, m.indices);
  put_unpacked_varints(s, 3, m.dims);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Dimension& m) {
  put(s, 1, m.dim_value);
  put(s, 2, m.dim_param);
  put(s, 3, m.denotation);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TensorShape& m) {
  put(s, 1, m.dim);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TypeTensor& m) {
  put(s, 1, m.elem_type);
  put(s, 2, m.shape);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TypeElem& m) {
  put(s, 1, m.elem_type);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TypeMap& m) {
  put(s, 1, m.key_type);
  put(s, 2, m.value_type);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TypeOpaque& m) {
  put(s, 1, m.domain);
  put(s, 2, m.name);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Type& m) {
  put(s, 1, m.tensor_type);
  put(s, 4, m.sequence_type);
  put(s, 5, m.map_type);
  put(s, 6, m.denotation);
  put(s, 7, m.opaque_type);
  put(s, 8, m.sparse_tensor_type);
  put(s, 9, m.optional_type);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const ValueInfo& m) {
  put(s, 1, m.name);
  put(s, 2, m.type);
  put(s, 3, m.doc_string);
  put(s, 4, m.metadata_props);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Attribute& m) {
  put(s, 1, m.name);
  put(s, 2, m.f);
  put(s, 3, m.i);
  put(s, 4, m.s);
  put(s, 5, m.t);
  put(s, 6, m.g);
  put_unpacked_floats(s, 7, m.floats);
  put_unpacked_varints(s, 8, m.ints);
  put(s, 9, m.strings);
  put(s, 10, m.tensors);
  put(s, 11, m.graphs);
  put(s, 13, m.doc_string);
  put(s, 14, m.tp);
  put(s, 15, m.type_protos);
  put(s, 20, m.type);
  put(s, 21, m.ref_attr_name);
  put(s, 22, m.sparse_tensor);
  put(s, 23, m.sparse_tensors);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Node& m) {
  put(s, 1, m.input);
  put(s, 2, m.output);
  put(s, 3, m.name);
  put(s, 4, m.op_type);
  put(s, 5, m.attribute);
  put(s, 6, m.doc_string);
  put(s, 7, m.domain);
  put(s, 8, m.overload);
  put(s, 9, m.metadata_props);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TensorAnnotation& m) {
  put(s, 1, m.tensor_name);
  put(s, 2, m.quant_parameter_tensor_names);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Graph& m) {
  put(s, 1, m.node);
  put(s, 2, m.name);
  put(s, 5, m.initializer);
  put(s, 10, m.doc_string);
  put(s, 11, m.input);
  put(s, 12, m.output);
  put(s, 13, m.value_info);
  put(s, 14, m.quantization_annotation);
  put(s, 15, m.sparse_initializer);
  put(s, 16, m.metadata_props);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const TrainingInfo& m) {
  put(s, 1, m.initialization);
  put(s, 2, m.algorithm);
  put(s, 3, m.initialization_binding);
  put(s, 4, m.update_binding);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Function& m) {
  put(s, 1, m.name);
  put(s, 4, m.input);
  put(s, 5, m.output);
  put(s, 6, m.attribute);
  put(s, 7, m.node);
  put(s, 8, m.doc_string);
  put(s, 9, m.opset_import);
  put(s, 10, m.domain);
  put(s, 11, m.attribute_proto);
  put(s, 12, m.value_info);
  put(s, 13, m.overload);
  put(s, 14, m.metadata_props);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const Model& m) {
  put(s, 1, m.ir_version);
  put(s, 2, m.producer_name);
  put(s, 3, m.producer_version);
  put(s, 4, m.domain);
  put(s, 5, m.model_version);
  put(s, 6, m.doc_string);
  put(s, 7, m.graph);
  put(s, 8, m.opset_import);
  put(s, 14, m.metadata_props);
  put(s, 20, m.training_info);
  put(s, 25, m.functions);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const SequenceValue& m) {
  put(s, 1, m.name);
  put(s, 2, m.elem_type);
  put(s, 3, m.tensor_values);
  put(s, 4, m.sparse_tensor_values);
  put(s, 5, m.sequence_values);
  put(s, 6, m.map_values);
  put(s, 7, m.optional_values);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const MapValue& m) {
  put(s, 1, m.name);
  put(s, 2, m.key_type);
  put_unpacked_varints(s, 3, m.keys);
  put(s, 4, m.string_keys);
  put(s, 5, m.values);
  put_unknown(s, m.unknown);
}
void encode(Sink& s, const OptionalValue& m) {
  put(s, 1, m.name);
  put(s, 2, m.elem_type);
  put(s, 3, m.tensor_value);
  put(s, 4, m.sparse_tensor_value);
  put(s, 5, m.sequence_value);
  put(s, 6, m.map_value);
  put(s, 7, m.optional_value);
  put_unknown(s, m.unknown);
}

template <class M>
std::string to_string(const M& m) {
  Sink s;
  encode(s, m);
  return s.str();
}

}  // namespace

std::string serialize_model(const Model& m) { return to_string(m); }
std::string serialize_tensor(const Tensor& t) { return to_string(t); }
std::string serialize_sequence(const SequenceValue& v) { return to_string(v); }
std::string serialize_map(const MapValue& v) { return to_string(v); }
std::string serialize_optional(const OptionalValue& v) { return to_string(v); }

void serialize_model_to(const Model& m, const std::function<void(std::string_view)>& out) {
  Sink s;
  encode(s, m);
  s.for_each(out);
}

void write_model_file(const Model& m, const std::filesystem::path& path) {
  Sink s;
  encode(s, m);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path.string(), ": cannot open for writing: ", std::strerror(errno));
  bool ok = true;
  s.for_each([&](std::string_view piece) {
    if (ok && !piece.empty() && std::fwrite(piece.data(), 1, piece.size(), f) != piece.size()) ok = false;
  });
  if (std::fclose(f) != 0) ok = false;
  if (!ok) fail(path.string(), ": write failed: ", std::strerror(errno));
}

}  // namespace onyx::pb
