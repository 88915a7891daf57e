// ai.onnx.ml tree ensembles: TreeEnsembleRegressor-1/3/5, TreeEnsembleClassifier-1/3/5, TreeEnsemble-5.
// v1: nodes_* tuples (treeids, nodeids, featureids, values, modes BRANCH_LEQ/LT/GTE/GT/EQ/NEQ/LEAF, true/false node
//     ids, missing_value_tracks_true) and votes at the leaves (target_* / class_*: treeids, nodeids, ids, weights),
//     base_values, post_transform, aggregate_function (regressor: SUM, AVERAGE, MIN, MAX).
// v3: the same, plus nodes_values/nodes_hitrates/*_weights/base_values "_as_tensor" (double) alternatives — one of
//     the pair only.
// v5: TreeEnsembleRegressor and TreeEnsembleClassifier are deprecated (a model using them at ai.onnx.ml opset >= 5 is
//     refused with a message pointing to TreeEnsemble). TreeEnsemble-5 has interior nodes (nodes_*: featureids,
//     splits tensor, modes tensor with 0..6 = LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, true/false ids that index nodes or,
//     with nodes_trueleafs/falseleafs set, the leaf_* arrays), one (target, weight) per leaf, tree_roots, n_targets,
//     integer aggregate_function (0 AVERAGE, 1 SUM, 2 MIN, 3 MAX) and post_transform (0 NONE .. 4 PROBIT);
//     MEMBER nodes test set membership against membership_values (NaN-separated sets in node order). X and Y are
//     float, double or float16.
// A NaN feature takes the true branch when missing_value_tracks_true is set; otherwise the comparison decides
// (false, except NEQ). MIN/MAX leave a target without votes at 0. AVERAGE divides by the number of trees.
// Classifier: scores per class (+ base_values); when the votes use a single class (binary), the scores are
// [1 - s, s] (NONE, PROBIT) or [-s, s] (other transforms); the label is the arg-max class after post_transform.
#include <map>

#include "ops/ml/post_transform.hpp"
#include "ops/ml/rows_and_labels.hpp"

namespace onyx::ops {
namespace {

using ml::PostTransform;

enum NodeMode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };
enum class Aggregate { Average = 0, Sum = 1, Min = 2, Max = 3 };

Aggregate parse_aggregate(const std::string& s) {
  if (s == "SUM") return Aggregate::Sum;
  if (s == "AVERAGE") return Aggregate::Average;
  if (s == "MIN") return Aggregate::Min;
  if (s == "MAX") return Aggregate::Max;
  fail("aggregate_function '", s, "' is not one of SUM, AVERAGE, MIN, MAX");
}

// The trees, compiled: interior nodes and leaves in flat arrays. A child or root reference r >= 0 is interior node
// r; r < 0 is leaf -(r + 1).
struct Forest {
  struct Node {
    uint8_t mode = kLeq;
    bool missing_true = false;
    int64_t feature = 0;
    double split = 0;
    size_t set_begin = 0, set_end = 0;  // MEMBER: sorted values in `members`
    int64_t next[2] = {0, 0};           // true, false
  };
  std::vector<Node> nodes;
  std::vector<double> members;
  std::vector<size_t> leaf_begin;  // votes of leaf l: [leaf_begin[l], leaf_begin[l + 1])
  std::vector<int64_t> vote_target;
  std::vector<double> vote_weight;
  std::vector<int64_t> roots;
  int64_t max_feature = -1;
  int64_t n_targets = 0;
  Aggregate agg = Aggregate::Sum;

  bool test(const Node& nd, double v) const {
    if (std::isnan(v)) {
      if (nd.missing_true) return true;
      return nd.mode == kNeq;
    }
    switch (nd.mode) {
      case kLeq: return v <= nd.split;
      case kLt: return v < nd.split;
      case kGte: return v >= nd.split;
      case kGt: return v > nd.split;
      case kEq: return v == nd.split;
      case kNeq: return v != nd.split;
      case kMember:
        return std::binary_search(members.begin() + static_cast<std::ptrdiff_t>(nd.set_begin),
                                  members.begin() + static_cast<std::ptrdiff_t>(nd.set_end), v);
    }
    return false;
  }

  size_t leaf_of(int64_t ref, const double* x) const {
    size_t steps = 0;
    while (ref >= 0) {
      const Node& nd = nodes[static_cast<size_t>(ref)];
      ref = nd.next[test(nd, x[nd.feature]) ? 0 : 1];
      if (++steps > nodes.size()) fail("a tree has a cycle (a path visits more nodes than there are)");
    }
    return static_cast<size_t>(-(ref + 1));
  }

  void check_ref(int64_t ref, const char* what) const {
    if (ref >= 0 ? static_cast<size_t>(ref) >= nodes.size() : static_cast<size_t>(-(ref + 1)) >= leaf_begin.size() - 1)
      fail(what, " refers to a ", ref >= 0 ? "node" : "leaf", " that does not exist");
  }

  void finish() {
    for (const Node& nd : nodes) {
      check_ref(nd.next[0], "a true branch");
      check_ref(nd.next[1], "a false branch");
      if (nd.feature < 0) fail("a node has a negative feature id ", nd.feature);
      max_feature = std::max(max_feature, nd.feature);
    }
    for (int64_t r : roots) check_ref(r, "a tree root");
    for (int64_t t : vote_target)
      if (t < 0 || t >= n_targets) fail("a leaf votes for target/class ", t, ", outside [0, ", n_targets, ")");
  }

  // Aggregated scores [N, n_targets] for rows of width c.
  std::vector<double> scores(const ml::Rows& x) const {
    if (max_feature >= x.c) fail("the trees read feature ", max_feature, ", the input has ", x.c, " features");
    const size_t nt = static_cast<size_t>(n_targets);
    std::vector<double> out(static_cast<size_t>(x.n) * nt, 0.0);
    std::vector<char> seen(nt);
    for (int64_t n = 0; n < x.n; ++n) {
      double* o = out.data() + n * nt;
      std::fill(seen.begin(), seen.end(), 0);
      for (int64_t root : roots) {
        size_t leaf = leaf_of(root, x.row(n));
        for (size_t v = leaf_begin[leaf]; v < leaf_begin[leaf + 1]; ++v) {
          size_t t = static_cast<size_t>(vote_target[v]);
          double w = vote_weight[v];
          switch (agg) {
            case Aggregate::Sum:
            case Aggregate::Average: o[t] += w; break;
            case Aggregate::Min: o[t] = seen[t] ? std::min(o[t], w) : w; break;
            case Aggregate::Max: o[t] = seen[t] ? std::max(o[t], w) : w; break;
          }
          seen[t] = 1;
        }
      }
      if (agg == Aggregate::Average && !roots.empty())
        for (size_t t = 0; t < nt; ++t) o[t] /= static_cast<double>(roots.size());
    }
    return out;
  }
};

// ---- v1/v3 attributes ----

template <class T>
void check_len(const std::vector<T>& v, size_t n, const std::string& name) {
  if (v.size() != n) fail("attribute ", name, " has ", v.size(), " values, expected ", n, " (one per node/vote)");
}

// Builds a forest from the nodes_* and <prefix>* (target_ / class_) attributes of the v1/v3 operators.
std::shared_ptr<Forest> build_legacy(const AttributeView& a, const std::string& prefix, bool tensors, int64_t n_targets) {
  auto f = std::make_shared<Forest>();
  f->n_targets = n_targets;
  std::vector<int64_t> tree = a.get_ints("nodes_treeids", std::vector<int64_t>{});
  std::vector<int64_t> id = a.get_ints("nodes_nodeids", std::vector<int64_t>{});
  std::vector<int64_t> feat = a.get_ints("nodes_featureids", std::vector<int64_t>{});
  std::vector<std::string> modes = a.get_strings("nodes_modes", std::vector<std::string>{});
  std::vector<int64_t> tid = a.get_ints("nodes_truenodeids", std::vector<int64_t>{});
  std::vector<int64_t> fid = a.get_ints("nodes_falsenodeids", std::vector<int64_t>{});
  std::vector<int64_t> miss = a.get_ints("nodes_missing_value_tracks_true", std::vector<int64_t>{});
  std::vector<double> vals = ml::floats_or_tensor(a, "nodes_values", tensors);
  (void)ml::floats_or_tensor(a, "nodes_hitrates", tensors);  // only checks the pair; hit rates do not change results
  const size_t n = tree.size();
  if (n == 0) fail("the ensemble has no nodes (nodes_treeids is empty)");
  check_len(id, n, "nodes_nodeids");
  check_len(feat, n, "nodes_featureids");
  check_len(modes, n, "nodes_modes");
  check_len(tid, n, "nodes_truenodeids");
  check_len(fid, n, "nodes_falsenodeids");
  if (!miss.empty()) check_len(miss, n, "nodes_missing_value_tracks_true");
  if (!vals.empty()) check_len(vals, n, "nodes_values");

  std::map<std::pair<int64_t, int64_t>, size_t> index;
  std::vector<int64_t> ref(n);  // compiled reference of each node
  int64_t branches = 0, leaves = 0;
  std::vector<uint8_t> mode(n);
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(std::make_pair(tree[i], id[i]), i).second)
      fail("node id ", id[i], " appears twice in tree ", tree[i]);
    const std::string& m = modes[i];
    if (m == "LEAF") {
      ref[i] = -(++leaves);
      continue;
    }
    if (m == "BRANCH_LEQ") mode[i] = kLeq;
    else if (m == "BRANCH_LT") mode[i] = kLt;
    else if (m == "BRANCH_GTE") mode[i] = kGte;
    else if (m == "BRANCH_GT") mode[i] = kGt;
    else if (m == "BRANCH_EQ") mode[i] = kEq;
    else if (m == "BRANCH_NEQ") mode[i] = kNeq;
    else fail("node mode '", m, "' is not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF");
    ref[i] = branches++;
  }
  auto child = [&](size_t i, int64_t node_id) {
    auto it = index.find({tree[i], node_id});
    if (it == index.end()) fail("node ", id[i], " of tree ", tree[i], " points to node ", node_id, ", which does not exist");
    return ref[it->second];
  };
  for (size_t i = 0; i < n; ++i) {
    if (ref[i] < 0) continue;
    Forest::Node nd;
    nd.mode = mode[i];
    nd.feature = feat[i];
    nd.split = vals.empty() ? 0.0 : vals[i];
    nd.missing_true = !miss.empty() && miss[i] != 0;
    nd.next[0] = child(i, tid[i]);
    nd.next[1] = child(i, fid[i]);
    f->nodes.push_back(nd);
  }
  // Roots: the first node of each tree, trees in ascending id order.
  std::map<int64_t, size_t> first;
  for (size_t i = 0; i < n; ++i) first.emplace(tree[i], i);
  for (const auto& [t, i] : first) f->roots.push_back(ref[i]);

  // Votes, grouped by leaf.
  std::vector<int64_t> vt = a.get_ints(prefix + "treeids", std::vector<int64_t>{});
  std::vector<int64_t> vn = a.get_ints(prefix + "nodeids", std::vector<int64_t>{});
  std::vector<int64_t> vi = a.get_ints(prefix + "ids", std::vector<int64_t>{});
  std::vector<double> vw = ml::floats_or_tensor(a, prefix + "weights", tensors);
  check_len(vn, vt.size(), prefix + "nodeids");
  check_len(vi, vt.size(), prefix + "ids");
  check_len(vw, vt.size(), prefix + "weights");
  std::vector<std::vector<size_t>> by_leaf(static_cast<size_t>(leaves));
  for (size_t k = 0; k < vt.size(); ++k) {
    auto it = index.find({vt[k], vn[k]});
    if (it == index.end()) fail("a weight is for node ", vn[k], " of tree ", vt[k], ", which does not exist");
    int64_t r = ref[it->second];
    if (r >= 0) fail("a weight is for node ", vn[k], " of tree ", vt[k], ", which is not a LEAF");
    by_leaf[static_cast<size_t>(-(r + 1))].push_back(k);
  }
  for (const auto& votes : by_leaf) {
    f->leaf_begin.push_back(f->vote_target.size());
    for (size_t k : votes) {
      f->vote_target.push_back(vi[k]);
      f->vote_weight.push_back(vw[k]);
    }
  }
  f->leaf_begin.push_back(f->vote_target.size());
  f->finish();
  return f;
}

const std::vector<DataType> kLegacyInputs = {DataType::Float, DataType::Double, DataType::Int64, DataType::Int32};

[[noreturn]] void deprecated(const char* op) {
  fail(op, " is deprecated since ai.onnx.ml opset 5; use TreeEnsemble (with ArgMax/LabelEncoder for classes)");
}

void register_tree_regressor(Registry& r) {
  auto targets_of = [](const AttributeView& a) {
    if (a.has("n_targets")) return a.get_int("n_targets");
    int64_t m = 0;
    for (int64_t t : a.get_ints("target_ids", std::vector<int64_t>{})) m = std::max(m, t + 1);
    return std::max<int64_t>(m, 1);
  };
  auto infer = [targets_of](InferContext& ctx) {
    if (ctx.opset >= 5) deprecated("TreeEnsembleRegressor");
    ctx.set_output(0, Type::tensor(DataType::Float, shape_from({ml::batch_dim(ctx), known_dim(targets_of(ctx.attrs))})));
  };
  auto kernel = [targets_of](const KernelInit& init) {
    if (init.opset >= 5) deprecated("TreeEnsembleRegressor");
    const bool tensors = init.opset >= 3;
    int64_t nt = targets_of(init.attrs);
    if (nt < 1) fail("n_targets must be >= 1, got ", nt);
    auto f = build_legacy(init.attrs, "target_", tensors, nt);
    f->agg = parse_aggregate(init.attrs.get_string("aggregate_function", "SUM"));
    std::vector<double> base = ml::floats_or_tensor(init.attrs, "base_values", tensors);
    if (!base.empty() && static_cast<int64_t>(base.size()) != nt)
      fail("base_values has ", base.size(), " values, expected one per target (", nt, ")");
    PostTransform pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    return make_kernel([f, base, pt, nt](KernelContext& ctx) {
      ml::Rows x = ml::read_rows(ctx.input(0));
      std::vector<double> y = f->scores(x);
      for (int64_t n = 0; n < x.n; ++n) {
        double* row = y.data() + n * nt;
        for (size_t t = 0; t < base.size(); ++t) row[t] += base[t];
        ml::apply_post_transform(pt, row, static_cast<size_t>(nt));
      }
      store_doubles(ctx.allocate_output(0, DataType::Float, {x.n, nt}), y);
    });
  };
  add_versions(r, "ai.onnx.ml", "TreeEnsembleRegressor", {1, 3, 5}, {{{0}, kLegacyInputs}}, infer, kernel);
}

void register_tree_classifier(Registry& r) {
  auto infer = [](InferContext& ctx) {
    if (ctx.opset >= 5) deprecated("TreeEnsembleClassifier");
    ml::ClassLabels l = ml::read_class_labels(ctx.attrs, "classlabels_int64s");
    Dim n = ml::batch_dim(ctx);
    ctx.set_output(0, Type::tensor(l.strings ? DataType::String : DataType::Int64, shape_from({n})));
    std::vector<int64_t> ids = ctx.attrs.get_ints("class_ids", std::vector<int64_t>{});
    bool single = !ids.empty() && std::all_of(ids.begin(), ids.end(), [&](int64_t v) { return v == ids[0]; });
    int64_t cols = (single && l.size() <= 2) ? 2 : static_cast<int64_t>(l.size());
    ctx.set_output(1, Type::tensor(DataType::Float, shape_from({n, known_dim(cols)})));
  };
  auto kernel = [](const KernelInit& init) {
    if (init.opset >= 5) deprecated("TreeEnsembleClassifier");
    const bool tensors = init.opset >= 3;
    ml::ClassLabels labels = ml::read_class_labels(init.attrs, "classlabels_int64s");
    const int64_t e = static_cast<int64_t>(labels.size());
    if (e == 0) fail("one of classlabels_strings or classlabels_int64s must be set");
    auto f = build_legacy(init.attrs, "class_", tensors, e);
    std::vector<double> base = ml::floats_or_tensor(init.attrs, "base_values", tensors);
    if (!base.empty() && static_cast<int64_t>(base.size()) != e)
      fail("base_values has ", base.size(), " values, expected one per class (", e, ")");
    PostTransform pt = ml::parse_post_transform(init.attrs.get_string("post_transform", "NONE"));
    // Binary: every vote is for the same class, and there are at most two classes.
    bool binary = !f->vote_target.empty() && e <= 2 &&
                  std::all_of(f->vote_target.begin(), f->vote_target.end(),
                              [&](int64_t v) { return v == f->vote_target[0]; });
    int64_t used = binary ? f->vote_target[0] : 0;
    if (binary && e == 1 && labels.strings) fail("a binary classifier with one string label is not supported");
    return make_kernel([=](KernelContext& ctx) {
      ml::Rows x = ml::read_rows(ctx.input(0));
      std::vector<double> s = f->scores(x);
      const int64_t cols = binary ? 2 : e;
      std::vector<double> z(static_cast<size_t>(x.n * cols));
      std::vector<int64_t> idx(static_cast<size_t>(x.n));
      for (int64_t n = 0; n < x.n; ++n) {
        double* row = z.data() + n * cols;
        const double* sr = s.data() + n * e;
        if (binary) {
          double v = sr[used] + (base.empty() ? 0.0 : base[used]);
          row[1] = v;
          row[0] = (pt == PostTransform::None || pt == PostTransform::Probit) ? 1.0 - v : -v;
        } else {
          for (int64_t k = 0; k < e; ++k) row[k] = sr[k] + (base.empty() ? 0.0 : base[k]);
        }
        ml::apply_post_transform(pt, row, static_cast<size_t>(cols));
        idx[n] = std::max_element(row, row + cols) - row;
      }
      if (binary && e == 1) {
        // One label: it is the positive class; the negative class is 0.
        Tensor& y = ctx.allocate_output(0, DataType::Int64, {x.n});
        for (int64_t n = 0; n < x.n; ++n) y.mutable_data<int64_t>()[n] = idx[n] == 1 ? labels.i[0] : 0;
      } else {
        ml::write_labels(ctx, labels, idx);
      }
      if (ctx.num_outputs() > 1) store_doubles(ctx.allocate_output(1, DataType::Float, {x.n, cols}), z);
    });
  };
  add_versions(r, "ai.onnx.ml", "TreeEnsembleClassifier", {1, 3, 5}, {{{0}, kLegacyInputs}}, infer, kernel);
}

// ---- TreeEnsemble-5 ----

const std::vector<DataType> kV5Types = {DataType::Float, DataType::Double, DataType::Float16};

const Tensor& required_tensor(const AttributeView& a, const char* name) {
  const Tensor* t = a.get_tensor(name);
  if (!t) fail("required attribute '", name, "' is missing");
  return *t;
}

// n_targets, or when absent one more than the largest leaf target id.
int64_t v5_targets(const AttributeView& a) {
  if (a.has("n_targets")) return a.get_int("n_targets");
  int64_t m = 0;
  for (int64_t t : a.get_ints("leaf_targetids", std::vector<int64_t>{})) m = std::max(m, t + 1);
  return std::max<int64_t>(m, 1);
}

std::shared_ptr<Forest> build_v5(const AttributeView& a) {
  auto f = std::make_shared<Forest>();
  f->n_targets = v5_targets(a);
  if (f->n_targets < 1) fail("n_targets must be >= 1, got ", f->n_targets);
  int64_t agg = a.get_int("aggregate_function", 1);
  if (agg < 0 || agg > 3) fail("aggregate_function ", agg, " is not one of 0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)");
  f->agg = static_cast<Aggregate>(agg);
  std::vector<int64_t> feat = a.get_ints("nodes_featureids");
  std::vector<double> splits = read_doubles(required_tensor(a, "nodes_splits"));
  const Tensor& modes_t = required_tensor(a, "nodes_modes");
  if (modes_t.dtype() != DataType::UInt8) fail("nodes_modes must be a uint8 tensor, got ", modes_t.dtype());
  std::vector<int64_t> modes = read_ints(modes_t);
  std::vector<int64_t> tid = a.get_ints("nodes_truenodeids");
  std::vector<int64_t> fid = a.get_ints("nodes_falsenodeids");
  std::vector<int64_t> tleaf = a.get_ints("nodes_trueleafs");
  std::vector<int64_t> fleaf = a.get_ints("nodes_falseleafs");
  std::vector<int64_t> miss = a.get_ints("nodes_missing_value_tracks_true", std::vector<int64_t>{});
  std::vector<int64_t> targets = a.get_ints("leaf_targetids");
  std::vector<double> weights = read_doubles(required_tensor(a, "leaf_weights"));
  std::vector<double> members;
  if (const Tensor* m = a.get_tensor("membership_values")) members = read_doubles(*m);
  const size_t n = feat.size();
  check_len(splits, n, "nodes_splits");
  check_len(modes, n, "nodes_modes");
  check_len(tid, n, "nodes_truenodeids");
  check_len(fid, n, "nodes_falsenodeids");
  check_len(tleaf, n, "nodes_trueleafs");
  check_len(fleaf, n, "nodes_falseleafs");
  if (!miss.empty()) check_len(miss, n, "nodes_missing_value_tracks_true");
  check_len(weights, targets.size(), "leaf_weights");
  size_t mpos = 0;
  for (size_t i = 0; i < n; ++i) {
    Forest::Node nd;
    if (modes[i] < 0 || modes[i] > kMember) fail("nodes_modes[", i, "] = ", modes[i], " is not a mode (0..6)");
    nd.mode = static_cast<uint8_t>(modes[i]);
    nd.feature = feat[i];
    nd.split = splits[i];
    nd.missing_true = !miss.empty() && miss[i] != 0;
    for (int side = 0; side < 2; ++side) {
      int64_t c = side == 0 ? tid[i] : fid[i];
      bool leaf = (side == 0 ? tleaf[i] : fleaf[i]) != 0;
      size_t limit = leaf ? targets.size() : n;
      if (c < 0 || static_cast<uint64_t>(c) >= limit)
        fail("node ", i, ": ", side == 0 ? "true" : "false", " child ", c, " is not a ", leaf ? "leaf" : "node",
             " index (", limit, leaf ? " leaves)" : " nodes)");
      nd.next[side] = leaf ? -(c + 1) : c;
    }
    if (nd.mode == kMember) {
      // The next NaN-terminated run of membership_values (the last run may end with the list).
      nd.set_begin = f->members.size();
      if (mpos >= members.size()) fail("membership_values has no set for the membership node ", i);
      while (mpos < members.size() && !std::isnan(members[mpos])) f->members.push_back(members[mpos++]);
      ++mpos;
      nd.set_end = f->members.size();
      std::sort(f->members.begin() + static_cast<std::ptrdiff_t>(nd.set_begin), f->members.end());
    }
    f->nodes.push_back(nd);
  }
  for (size_t l = 0; l <= targets.size(); ++l) f->leaf_begin.push_back(l);
  f->vote_target = targets;
  f->vote_weight = weights;
  f->roots = a.get_ints("tree_roots");
  if (f->roots.empty()) fail("tree_roots is empty");
  for (int64_t r : f->roots)
    if (r < 0 || static_cast<size_t>(r) >= n) fail("tree root ", r, " is not a node index (", n, " nodes)");
  f->finish();
  return f;
}

void register_tree_ensemble(Registry& r) {
  auto infer = [](InferContext& ctx) {
    DataType dt = ctx.input_dtype(0);
    for (const char* name : {"nodes_splits", "leaf_weights"}) {
      const Tensor* t = ctx.attrs.get_tensor(name);
      if (t && dt != DataType::Undefined && t->dtype() != dt)
        ctx.error(cat(name, " has element type ", t->dtype(), ", the input is ", dt));
    }
    int64_t nt = v5_targets(ctx.attrs);
    if (ctx.has_input(0) && ctx.input_type(0).shape.rank_known && ctx.input_type(0).shape.dims.size() != 2)
      ctx.error(cat("input X must be [N,F], got ", ctx.input_type(0).shape.to_string()));
    ctx.set_output(0, Type::tensor(dt, shape_from({ml::batch_dim(ctx), known_dim(nt)})));
  };
  auto kernel = [](const KernelInit& init) {
    auto f = build_v5(init.attrs);
    PostTransform pt = ml::post_transform_from_int(init.attrs.get_int("post_transform", 0));
    return make_kernel([f, pt](KernelContext& ctx) {
      const Tensor& xt = ctx.input(0);
      if (xt.dims().size() != 2) ctx.error(cat("input X must be [N,F], got ", shape_of(xt.dims()).to_string()));
      ml::Rows x = ml::read_rows(xt);
      std::vector<double> y = f->scores(x);
      for (int64_t n = 0; n < x.n; ++n) ml::apply_post_transform(pt, y.data() + n * f->n_targets, f->n_targets);
      store_doubles(ctx.allocate_output(0, xt.dtype(), {x.n, f->n_targets}), y);
    });
  };
  add_versions(r, "ai.onnx.ml", "TreeEnsemble", {5}, {{{0}, kV5Types}}, infer, kernel);
}

}  // namespace

void register_ml_tree_ensemble(Registry& r) {
  register_tree_regressor(r);
  register_tree_classifier(r);
  register_tree_ensemble(r);
}

}  // namespace onyx::ops
