// ai.onnx TfIdfVectorizer (9, the only version).
// Counts the n-grams of `pool_strings` / `pool_int64s` found in each row of X ([C] or [N, C]; a scalar is one
// row of one item), for n in [min_gram_length, max_gram_length]; an n-gram may skip up to max_skip_count items
// between its items (the same skip between every pair; unigrams count once, not once per skip). The pool holds
// n-grams of each length back to back, ngram_counts[i] being where the (i+1)-grams start; ngram_indexes maps the
// k-th n-gram of the pool to its output column. Output (float) [max(ngram_indexes)+1] or [N, that]:
// TF: the counts; IDF: weights[col] (1 without weights) where the count is non-zero; TFIDF: count * weights[col].
// When the pool repeats an n-gram, its last occurrence decides the column.
#include <map>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class TfIdfMode { TF, IDF, TFIDF };

// A trie over pool items: each node is an n-gram prefix; `column` >= 0 where a pool n-gram ends.
template <class Key>
struct NgramTrie {
  struct Node {
    std::map<Key, int> children;
    int64_t column = -1;
    int size = 0;  // n of the n-gram ending here
  };
  std::vector<Node> nodes{Node{}};

  void insert(const std::vector<Key>& items, size_t begin, int n, int64_t column) {
    int cur = 0;
    for (int k = 0; k < n; ++k) {
      const Key& item = items[begin + k];
      auto it = nodes[cur].children.find(item);
      int next;
      if (it == nodes[cur].children.end()) {
        next = static_cast<int>(nodes.size());
        nodes[cur].children.emplace(item, next);
        nodes.push_back(Node{});
        nodes.back().size = k + 1;
      } else {
        next = it->second;
      }
      cur = next;
    }
    nodes[cur].column = column;
  }
  int child(int node, const Key& k) const {
    auto it = nodes[node].children.find(k);
    return it == nodes[node].children.end() ? -1 : it->second;
  }
};

struct TfIdfConfig {
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  TfIdfMode mode = TfIdfMode::TF;
  int64_t out_size = 0;
  std::vector<float> weights;
  bool strings = false;
  NgramTrie<int64_t> int_trie;
  NgramTrie<std::string> str_trie;
};

int64_t tfidf_output_size(const AttributeView& attrs) {
  std::vector<int64_t> idx = attrs.get_ints("ngram_indexes");
  if (idx.empty()) fail("ngram_indexes must not be empty");
  int64_t mx = -1;
  for (int64_t v : idx) {
    if (v < 0) fail("ngram_indexes must be non-negative, got ", v);
    mx = std::max(mx, v);
  }
  if (mx >= (int64_t{1} << 28)) fail("ngram_indexes value ", mx, " is too large");
  return mx + 1;
}

template <class Key>
void build_trie(NgramTrie<Key>& trie, const std::vector<Key>& pool, const std::vector<int64_t>& counts,
                const std::vector<int64_t>& indexes, int64_t min_n, int64_t max_n) {
  const int64_t total = static_cast<int64_t>(pool.size());
  size_t gram = 0;  // index of the next n-gram of the pool
  for (size_t level = 0; level < counts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const int64_t start = counts[level];
    const int64_t end = level + 1 < counts.size() ? counts[level + 1] : total;
    if (start < 0 || end > total || end < start)
      fail("ngram_counts ", start, "..", end, " for ", n, "-grams do not fit a pool of ", total, " items");
    if ((end - start) % n != 0) fail("the ", n, "-gram section of the pool has ", end - start, " items, not a multiple of ", n);
    const int64_t grams = (end - start) / n;
    for (int64_t g = 0; g < grams; ++g, ++gram) {
      if (gram >= indexes.size()) fail("ngram_indexes has ", indexes.size(), " entries but the pool has more n-grams");
      if (n >= min_n && n <= max_n)
        trie.insert(pool, static_cast<size_t>(start + g * n), static_cast<int>(n), indexes[gram]);
    }
  }
}

TfIdfConfig parse_tfidf(const AttributeView& attrs) {
  TfIdfConfig c;
  c.min_n = attrs.get_int("min_gram_length");
  c.max_n = attrs.get_int("max_gram_length");
  c.max_skip = attrs.get_int("max_skip_count");
  if (c.min_n < 1 || c.max_n < c.min_n)
    fail("need 1 <= min_gram_length <= max_gram_length, got ", c.min_n, " and ", c.max_n);
  if (c.max_skip < 0) fail("max_skip_count must be non-negative, got ", c.max_skip);
  std::string mode = attrs.get_string("mode");
  if (mode == "TF") c.mode = TfIdfMode::TF;
  else if (mode == "IDF") c.mode = TfIdfMode::IDF;
  else if (mode == "TFIDF") c.mode = TfIdfMode::TFIDF;
  else fail("mode must be TF, IDF or TFIDF, got '", mode, "'");
  c.out_size = tfidf_output_size(attrs);
  c.weights = attrs.get_floats("weights", std::vector<float>{});
  if (!c.weights.empty() && static_cast<int64_t>(c.weights.size()) < c.out_size)
    fail("weights has ", c.weights.size(), " values, fewer than the ", c.out_size, " output columns");
  std::vector<int64_t> counts = attrs.get_ints("ngram_counts");
  std::vector<int64_t> indexes = attrs.get_ints("ngram_indexes");
  bool has_ints = attrs.has("pool_int64s"), has_strings = attrs.has("pool_strings");
  if (has_ints == has_strings) fail("exactly one of pool_int64s and pool_strings must be given");
  c.strings = has_strings;
  if (has_strings) build_trie(c.str_trie, attrs.get_strings("pool_strings"), counts, indexes, c.min_n, c.max_n);
  else build_trie(c.int_trie, attrs.get_ints("pool_int64s"), counts, indexes, c.min_n, c.max_n);
  return c;
}

template <class Key>
void count_row(const NgramTrie<Key>& trie, const TfIdfConfig& c, const Key* row, int64_t len, int64_t* counts) {
  const int64_t max_distance = std::min(c.max_skip + 1, std::max<int64_t>(len, 1));
  for (int64_t d = 1; d <= max_distance; ++d) {
    for (int64_t start = 0; start < len; ++start) {
      int node = 0;
      int64_t item = start;
      for (int64_t n = 1; n <= c.max_n && item < len; ++n, item += d) {
        node = trie.child(node, row[item]);
        if (node < 0) break;
        const auto& nd = trie.nodes[node];
        if (nd.column >= 0 && (n >= 2 || d == 1)) ++counts[nd.column];
      }
    }
  }
}

void run_tfidf(const TfIdfConfig& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Dims& xd = x.dims();
  if (xd.size() > 2) ctx.error(cat("input must have shape [C] or [N, C], got ", shape_of(xd).to_string()));
  const int64_t rows = xd.size() == 2 ? xd[0] : 1;
  const int64_t len = xd.empty() ? 1 : xd.back();
  Dims out = xd.size() == 2 ? Dims{rows, c.out_size} : Dims{c.out_size};
  check_data_sized(out);
  std::vector<int64_t> counts(static_cast<size_t>(rows * c.out_size), 0);
  if (c.strings) {
    if (x.dtype() != D::String) ctx.error(cat("pool_strings needs a string input, got ", x.dtype()));
    const std::string* p = x.string_values().data();
    for (int64_t r = 0; r < rows; ++r) count_row(c.str_trie, c, p + r * len, len, counts.data() + r * c.out_size);
  } else {
    if (x.dtype() == D::String) ctx.error("pool_int64s needs an integer input, got string");
    std::vector<int64_t> v = read_ints(x);
    for (int64_t r = 0; r < rows; ++r) count_row(c.int_trie, c, v.data() + r * len, len, counts.data() + r * c.out_size);
  }
  Tensor& y = ctx.allocate_output(0, D::Float, out);
  float* py = y.mutable_data<float>();
  for (size_t i = 0; i < counts.size(); ++i) {
    const size_t col = i % static_cast<size_t>(c.out_size);
    const float w = c.weights.empty() ? 1.0f : c.weights[col];
    switch (c.mode) {
      case TfIdfMode::TF: py[i] = static_cast<float>(counts[i]); break;
      case TfIdfMode::IDF: py[i] = counts[i] > 0 ? w : 0.0f; break;
      case TfIdfMode::TFIDF: py[i] = static_cast<float>(counts[i]) * w; break;
    }
  }
}

}  // namespace

void register_tfidf(Registry& r) {
  add_versions(
      r, "", "TfIdfVectorizer", {9}, {{{0}, {D::String, D::Int32, D::Int64}}},
      [](InferContext& ctx) {
        const int64_t size = tfidf_output_size(ctx.attrs);
        const Type& t = ctx.input_type(0);
        Shape out;
        if (t.shape.rank_known) {
          if (t.shape.dims.size() > 2) ctx.error(cat("input must have shape [C] or [N, C], got ", t.shape.to_string()));
          out.rank_known = true;
          if (t.shape.dims.size() == 2) out.dims.push_back(t.shape.dims[0]);
          out.dims.push_back(known_dim(size));
        }
        ctx.set_output(0, Type::tensor(D::Float, out));
      },
      [](const KernelInit& init) {
        auto c = std::make_shared<const TfIdfConfig>(parse_tfidf(init.attrs));
        return make_kernel([c](KernelContext& ctx) { run_tfidf(*c, ctx); });
      });
}

}  // namespace onyx::ops
