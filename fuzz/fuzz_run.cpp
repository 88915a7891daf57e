// libFuzzer target for running models: the input is a model and the bytes its feeds are made of (model_mutator.hpp's
// RunInput). The session is created with a memory limit; every graph input gets a feed of its declared type, the
// dims the model leaves open and the elements taken from the feed bytes; the model runs twice with a deadline,
// the second time on the memory plan the first recorded, and when it has no random op the two runs' outputs must
// be equal bit for bit. Built with the structure-aware mutator (mutate_run_hook.cpp), which edits the model's
// attributes, dims, types and edges, and mutates the feed bytes.
//
// onyx::Error is the expected outcome; any other exception, a sanitizer report, a leak, a timeout, going over
// libFuzzer's memory limit or two runs that disagree is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"
#include "model_mutator.hpp"
#include "onyx/session.hpp"
#include "ops/registry.hpp"

namespace {

using namespace onyx;

// The feed bytes, read in order and from the start again when they run out (zeros when there are none).
class FeedBytes {
 public:
  explicit FeedBytes(std::string_view s) : s_(s) {}
  uint8_t next() { return s_.empty() ? 0 : static_cast<uint8_t>(s_[pos_++ % s_.size()]); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

constexpr uint64_t kMaxFeedElements = 1 << 16;

// A tensor of `type`, its open dims 0 to 3 and its elements from `in`; nullopt when it would be too large.
std::optional<Tensor> make_tensor(const std::string& name, const Type& type, FeedBytes& in) {
  std::vector<int64_t> dims;
  if (type.shape.rank_known) {
    for (const Dim& d : type.shape.dims) dims.push_back(d.value ? *d.value : in.next() % 4);
  } else {
    for (int r = in.next() % 4; r > 0; --r) dims.push_back(in.next() % 4);
  }
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > kMaxFeedElements / static_cast<uint64_t>(d))) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  if (type.elem == DataType::String) {
    std::vector<std::string> values(count);
    for (auto& v : values)
      for (int n = in.next() % 8; n > 0; --n) v.push_back(static_cast<char>(in.next()));
    return Tensor::strings(name, dims, std::move(values));
  }
  std::optional<uint64_t> bytes = raw_byte_size(type.elem, count);
  if (!bytes) return std::nullopt;
  std::string raw(*bytes, '\0');
  for (char& c : raw) c = static_cast<char>(in.next());
  return Tensor::owned(name, type.elem, dims, std::move(raw));
}

std::optional<Datum> make_feed(const std::string& name, const Type& type, FeedBytes& in, int depth = 0) {
  if (depth > 3) return std::nullopt;
  switch (type.kind) {
    case Type::Kind::Tensor: {
      auto t = make_tensor(name, type, in);
      if (!t) return std::nullopt;
      return Datum::of(std::move(*t));
    }
    case Type::Kind::Sequence: {
      if (!type.inner) return std::nullopt;
      std::vector<Datum> items;
      for (int n = in.next() % 3; n > 0; --n) {
        auto item = make_feed(name, *type.inner, in, depth + 1);
        if (!item) return std::nullopt;
        items.push_back(std::move(*item));
      }
      return Datum::sequence(std::move(items), *type.inner);
    }
    case Type::Kind::Optional: {
      if (!type.inner) return std::nullopt;
      if (in.next() % 2 == 0) return Datum::optional(std::nullopt, *type.inner);
      auto item = make_feed(name, *type.inner, in, depth + 1);
      if (!item) return std::nullopt;
      return Datum::optional(std::move(*item), *type.inner);
    }
    default:
      return std::nullopt;  // maps, sparse tensors and opaque values are not fed
  }
}

// True when a node among these, or in their subgraphs, is an op the registry marks as not deterministic (its two
// runs may differ). The session accepted the model, so its nesting depth is bounded.
bool draws_random(const std::vector<pb::Node>& nodes) {
  for (const pb::Node& n : nodes) {
    if (!ops::builtin_registry().deterministic(n.domain.value_or(""), n.op_type.value_or(""))) return true;
    for (const pb::Attribute& a : n.attribute) {
      if (a.g && draws_random(a.g->node)) return true;
      for (const pb::Graph& sub : a.graphs)
        if (draws_random(sub.node)) return true;
    }
  }
  return false;
}

bool draws_random(std::string_view model_bytes) {
  const pb::Model m = pb::parse_model(model_bytes, "fuzzed model");
  if (m.graph && draws_random(m.graph->node)) return true;
  for (const pb::Function& f : m.functions)
    if (draws_random(f.node)) return true;
  return false;
}

bool same(const Datum& a, const Datum& b) {
  if (a.kind != b.kind || a.elements.size() != b.elements.size()) return false;
  if (a.kind == Datum::Kind::Tensor) {
    return a.tensor.dtype() == b.tensor.dtype() && a.tensor.dims() == b.tensor.dims() &&
           a.tensor.bytes() == b.tensor.bytes() && a.tensor.string_values() == b.tensor.string_values();
  }
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (!same(a.elements[i], b.elements[i])) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::RunInput in;
  if (!fuzz::split_run_input({reinterpret_cast<const char*>(data), size}, in)) return 0;
  SessionOptions opts;
  opts.threads = 1;
  opts.log_level = 4;  // warnings about fuzzed models are not findings
  opts.optimization_level = static_cast<int>(std::hash<std::string_view>{}(in.model) % 4);
  opts.memory_limit_mb = 512;
  std::optional<Session> session;
  try {
    session.emplace(Session::from_bytes(std::string(in.model), opts));
  } catch (const Error&) {
    return 0;
  }
  FeedBytes bytes(in.feeds);
  std::map<std::string, Datum> feeds;
  for (const IoInfo& input : session->inputs()) {
    auto feed = make_feed(input.name, input.type, bytes);
    if (!feed) return 0;
    feeds.emplace(input.name, std::move(*feed));
  }
  RunOptions run;
  run.timeout_ms = 2000;
  std::vector<std::pair<std::string, Datum>> first, second;
  try {
    first = session->run(feeds, {}, run);
    second = session->run(feeds, {}, run);
  } catch (const Error&) {
    return 0;
  }
  if (draws_random(in.model)) return 0;
  for (size_t i = 0; i < first.size(); ++i) {
    if (!same(first[i].second, second[i].second)) {
      std::fprintf(stderr, "fuzz_run: output %s differs between two runs with the same feeds: %s, then %s\n",
                   first[i].first.c_str(), first[i].second.describe().c_str(), second[i].second.describe().c_str());
      __builtin_trap();
    }
  }
  return 0;
}
