#include "format/save.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "base/error.hpp"
#include "format/tensor_data.hpp"

namespace onyx {
namespace {

namespace fs = std::filesystem;

// Visits every TensorProto of a graph: initializers, sparse initializers and attribute tensors, recursing
// into subgraphs. `is_initializer` tells the callback whether the tensor is a (dense) initializer.
using TensorVisitor = std::function<void(pb::Tensor&, bool is_initializer)>;
void visit_graph(pb::Graph& g, const TensorVisitor& f);
void visit_attribute(pb::Attribute& a, const TensorVisitor& f) {
  if (a.t) f(*a.t, false);
  for (auto& t : a.tensors) f(t, false);
  if (a.sparse_tensor) {
    if (a.sparse_tensor->values) f(*a.sparse_tensor->values, false);
    if (a.sparse_tensor->indices) f(*a.sparse_tensor->indices, false);
  }
  for (auto& s : a.sparse_tensors) {
    if (s.values) f(*s.values, false);
    if (s.indices) f(*s.indices, false);
  }
  if (a.g) visit_graph(*a.g, f);
  for (auto& g : a.graphs) visit_graph(g, f);
}
void visit_nodes(std::vector<pb::Node>& nodes, const TensorVisitor& f) {
  for (auto& n : nodes)
    for (auto& a : n.attribute) visit_attribute(a, f);
}
void visit_graph(pb::Graph& g, const TensorVisitor& f) {
  for (auto& t : g.initializer) f(t, true);
  for (auto& s : g.sparse_initializer) {
    if (s.values) f(*s.values, false);
    if (s.indices) f(*s.indices, false);
  }
  visit_nodes(g.node, f);
}
void visit_model(pb::Model& m, const TensorVisitor& f) {
  if (m.graph) visit_graph(*m.graph, f);
  for (auto& ti : m.training_info) {
    if (ti.initialization) visit_graph(*ti.initialization, f);
    if (ti.algorithm) visit_graph(*ti.algorithm, f);
  }
  for (auto& fn : m.functions) {
    visit_nodes(fn.node, f);
    for (auto& a : fn.attribute_proto) visit_attribute(a, f);
  }
}

void clear_data(pb::Tensor& t) {
  t.raw_data.reset();
  t.float_data.clear();
  t.int32_data.clear();
  t.int64_data.clear();
  t.double_data.clear();
  t.uint64_data.clear();
  t.external_data.clear();
}

bool same_folder(const fs::path& a, const fs::path& b) {
  std::error_code e1, e2;
  auto ca = fs::weakly_canonical(a.empty() ? "." : a, e1), cb = fs::weakly_canonical(b.empty() ? "." : b, e2);
  return !e1 && !e2 && ca == cb;
}

class TempFile {
 public:
  explicit TempFile(fs::path final_path) : final_(std::move(final_path)) {
    tmp_ = final_;
    tmp_ += cat(".tmp", ::getpid());
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) fail(tmp_.string(), ": cannot open for writing: ", std::strerror(errno));
  }
  ~TempFile() {
    if (f_) std::fclose(f_);
    if (!committed_) {
      std::error_code ec;
      fs::remove(tmp_, ec);
    }
  }
  void write(std::string_view s) {
    if (!s.empty() && std::fwrite(s.data(), 1, s.size(), f_) != s.size())
      fail(tmp_.string(), ": write failed: ", std::strerror(errno));
    pos_ += s.size();
  }
  uint64_t pos() const { return pos_; }
  void commit() {
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail(tmp_.string(), ": write failed: ", std::strerror(errno));
    std::error_code ec;
    fs::rename(tmp_, final_, ec);
    if (ec) fail(final_.string(), ": cannot replace: ", ec.message());
    committed_ = true;
  }
  std::FILE* handle() { return f_; }

 private:
  fs::path final_, tmp_;
  std::FILE* f_ = nullptr;
  uint64_t pos_ = 0;
  bool committed_ = false;
};

}  // namespace

SaveReport save_model(const pb::ModelDocument& doc, const fs::path& out, const SaveOptions& opts) {
  SaveReport report;
  pb::Model model = doc.model;  // copies structure only: data stays views into the source
  pb::Arena arena;
  ExternalDataResolver resolver(doc.dir, doc.memory_files);
  const fs::path out_dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const bool keep_refs = same_folder(out_dir, doc.dir);
  const std::string data_name = opts.data_file.value_or(out.filename().string() + ".data");
  if (data_name.empty() || data_name.find('/') != std::string::npos || data_name == "." || data_name == "..")
    fail("external data file name '", data_name, "' must be a plain file name");

  std::optional<TempFile> data_out;
  std::vector<std::shared_ptr<const void>> keep;  // mappings of external data read while writing
  auto to_external = [&](pb::Tensor& t, const TensorBytes& bytes) {
    if (!data_out) data_out.emplace(out_dir / data_name);
    static const char kZeros[64] = {};
    data_out->write(std::string_view(kZeros, (64 - data_out->pos() % 64) % 64));  // keep every tensor 64-byte aligned
    uint64_t offset = data_out->pos();
    data_out->write(bytes.bytes);
    clear_data(t);
    t.data_location = 1;
    t.external_data.push_back({arena.save("location"), arena.save(data_name), {}});
    t.external_data.push_back({arena.save("offset"), arena.save(std::to_string(offset)), {}});
    t.external_data.push_back({arena.save("length"), arena.save(std::to_string(bytes.bytes.size())), {}});
    ++report.tensors_external;
    report.external_bytes += bytes.bytes.size();
  };

  visit_model(model, [&](pb::Tensor& t, bool is_initializer) {
    std::string what = cat(doc.label, ": tensor '", t.name.value_or(""), "'");
    bool string_tensor = t.data_type.value_or(0) == static_cast<int32_t>(DataType::String);
    if (is_external(t)) {
      if (opts.data == SaveOptions::Data::Keep && keep_refs) return;
      TensorBytes bytes = tensor_raw_bytes(t, &resolver, what);
      keep.push_back(bytes.keep);
      bool go_external = opts.data == SaveOptions::Data::Keep ||
                         (opts.data == SaveOptions::Data::External && is_initializer && bytes.bytes.size() >= opts.threshold);
      if (go_external) {
        to_external(t, bytes);
      } else {
        clear_data(t);
        t.raw_data = bytes.bytes;
        t.data_location = 0;  // what onnx.load writes when it brings external data inline
        ++report.tensors_inlined;
      }
      return;
    }
    if (opts.data == SaveOptions::Data::External && is_initializer && !string_tensor) {
      TensorBytes bytes = tensor_raw_bytes(t, nullptr, what);
      if (bytes.bytes.size() >= opts.threshold) {
        keep.push_back(bytes.keep);
        to_external(t, bytes);
      }
    }
  });

  if (data_out) {
    report.data_file = out_dir / data_name;
    data_out->commit();
  }
  TempFile model_out(out);
  pb::serialize_model_to(model, [&](std::string_view piece) { model_out.write(piece); });
  model_out.commit();
  return report;
}

}  // namespace onyx
