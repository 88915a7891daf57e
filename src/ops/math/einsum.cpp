// ai.onnx Einsum — version 12.
// equation "term,term,...[->output]": letters label axes; a letter repeated within a term takes the diagonal; a
// letter shared between terms is multiplied along; letters absent from the output are summed. "..." stands for the
// leading/middle unlabeled axes, which broadcast numpy-style between terms. Without "->" the output is the
// ellipsis axes followed by the letters that occur exactly once, in alphabetical (ASCII) order.
// All numeric types; floats accumulate in double, integers in wrapping 64-bit arithmetic.
#include <algorithm>
#include <array>

#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;
constexpr int kEllipsis = -1;

int label_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

// A term as symbols: label ids, kEllipsis for "...".
using Term = std::vector<int>;

Term parse_term(const std::string& s) {
  Term t;
  bool ell = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s.compare(i, 3, "...") != 0) fail("Einsum equation: '.' must be part of '...'");
      if (ell) fail("Einsum equation: a term has '...' more than once");
      ell = true;
      t.push_back(kEllipsis);
      i += 2;
      continue;
    }
    int id = label_id(s[i]);
    if (id < 0) fail("Einsum equation: invalid character '", s[i], "'");
    t.push_back(id);
  }
  return t;
}

struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Equation parse_equation(const std::string& raw, size_t num_inputs) {
  std::string eq;
  for (char c : raw)
    if (c != ' ') eq.push_back(c);
  Equation e;
  std::string lhs = eq;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    e.explicit_output = true;
    e.output = parse_term(eq.substr(arrow + 2));
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != num_inputs)
    fail("Einsum equation has ", e.inputs.size(), " input terms but the node has ", num_inputs, " inputs");
  std::array<int, 52> count{};
  bool any_ellipsis = false;
  for (const Term& t : e.inputs)
    for (int s : t) {
      if (s == kEllipsis) any_ellipsis = true;
      else ++count[s];
    }
  if (e.explicit_output) {
    std::array<bool, 52> seen{};
    bool ell = false;
    for (int s : e.output) {
      if (s == kEllipsis) {
        ell = true;
        continue;
      }
      if (seen[s]) fail("Einsum equation: output label '", static_cast<char>(s < 26 ? 'A' + s : 'a' + s - 26), "' repeats");
      if (count[s] == 0) fail("Einsum equation: output label '", static_cast<char>(s < 26 ? 'A' + s : 'a' + s - 26), "' is not in any input");
      seen[s] = true;
    }
    (void)ell;
  } else {
    if (any_ellipsis) e.output.push_back(kEllipsis);
    for (int s = 0; s < 52; ++s)
      if (count[s] == 1) e.output.push_back(s);
  }
  return e;
}

// Sizes resolved against input ranks/dims. A dim here is an int64 (static case) handled by the kernel; inference
// uses the same structure through Dim.
struct EinsumLayout {
  size_t ell_rank = 0;                // broadcast rank of "..."
  std::vector<size_t> term_ell_rank;  // per input
};

EinsumLayout layout_for(const Equation& e, const std::vector<size_t>& ranks) {
  EinsumLayout l;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Term& t = e.inputs[i];
    size_t labels = static_cast<size_t>(std::count_if(t.begin(), t.end(), [](int s) { return s != kEllipsis; }));
    bool ell = std::find(t.begin(), t.end(), kEllipsis) != t.end();
    if (ell ? ranks[i] < labels : ranks[i] != labels)
      fail("Einsum term ", i, " has ", labels, " labels", ell ? " and '...'" : "", " but input ", i, " has rank ", ranks[i]);
    size_t er = ell ? ranks[i] - labels : 0;
    l.term_ell_rank.push_back(er);
    l.ell_rank = std::max(l.ell_rank, er);
  }
  return l;
}

// Axis numbering for the computation: [0, ell_rank) are ellipsis dims, ell_rank + label id are labels.
struct EinsumPlan {
  size_t ell_rank = 0;
  std::vector<int64_t> size;                 // per axis (-1: unused label)
  std::vector<size_t> out_axes, red_axes;    // axes of the output (in order) and summed axes
  std::vector<std::vector<int64_t>> stride;  // per input, per axis: element stride (0: broadcast/absent)
};

EinsumPlan make_einsum_plan(const Equation& e, const std::vector<Dims>& dims) {
  std::vector<size_t> ranks;
  for (const Dims& d : dims) ranks.push_back(d.size());
  EinsumLayout l = layout_for(e, ranks);
  EinsumPlan p;
  p.ell_rank = l.ell_rank;
  const size_t naxes = l.ell_rank + 52;
  p.size.assign(naxes, -1);
  for (size_t k = 0; k < l.ell_rank; ++k) p.size[k] = 1;
  p.stride.assign(e.inputs.size(), std::vector<int64_t>(naxes, 0));
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    Dims st = strides_of(dims[i]);
    size_t pos = 0;
    for (int s : e.inputs[i]) {
      if (s == kEllipsis) {
        size_t er = l.term_ell_rank[i];
        for (size_t k = 0; k < er; ++k, ++pos) {
          size_t axis = l.ell_rank - er + k;
          int64_t d = dims[i][pos];
          if (d != 1) {
            if (p.size[axis] != 1 && p.size[axis] != d)
              fail("Einsum: '...' dims of input ", i, " do not broadcast (", d, " vs ", p.size[axis], ")");
            p.size[axis] = d;
            p.stride[i][axis] += st[pos];
          }
        }
        continue;
      }
      size_t axis = l.ell_rank + static_cast<size_t>(s);
      int64_t d = dims[i][pos];
      if (p.size[axis] >= 0 && p.size[axis] != d)
        fail("Einsum: label '", static_cast<char>(s < 26 ? 'A' + s : 'a' + s - 26), "' has size ", d, " in input ", i, " but ", p.size[axis], " elsewhere");
      p.size[axis] = d;
      p.stride[i][axis] += st[pos];
      ++pos;
    }
  }
  std::vector<bool> in_out(naxes, false);
  bool out_ell = false;
  for (int s : e.output) {
    if (s == kEllipsis) {
      out_ell = true;
      for (size_t k = 0; k < l.ell_rank; ++k) {
        p.out_axes.push_back(k);
        in_out[k] = true;
      }
    } else {
      p.out_axes.push_back(l.ell_rank + static_cast<size_t>(s));
      in_out[l.ell_rank + static_cast<size_t>(s)] = true;
    }
  }
  (void)out_ell;
  for (size_t a = 0; a < naxes; ++a)
    if (!in_out[a] && p.size[a] >= 0) p.red_axes.push_back(a);
  return p;
}

template <class T>
void compute(const EinsumPlan& p, const std::vector<const Tensor*>& ins, Tensor& y) {
  constexpr bool is_float = std::is_floating_point_v<T> || is_small_float_v<T>;
  using Acc = std::conditional_t<is_float, double, uint64_t>;
  auto load = [](const T& v) -> Acc {
    if constexpr (is_float) return to_double(v);
    else return static_cast<uint64_t>(static_cast<int64_t>(v));
  };
  const size_t n = ins.size();
  std::vector<const T*> src;
  for (const Tensor* t : ins) src.push_back(t->data<T>());
  T* dst = y.mutable_data<T>();
  const int64_t total_out = product(y.dims());
  int64_t total_red = 1;
  for (size_t a : p.red_axes) total_red *= p.size[a];
  std::vector<int64_t> oi(p.out_axes.size(), 0), ri(p.red_axes.size(), 0);
  std::vector<int64_t> base(n, 0), off(n, 0);
  for (int64_t o = 0; o < total_out; ++o) {
    Acc acc = 0;
    off = base;
    std::fill(ri.begin(), ri.end(), 0);
    for (int64_t r = 0; r < total_red; ++r) {
      Acc prod = 1;
      for (size_t i = 0; i < n; ++i) prod = static_cast<Acc>(prod * load(src[i][off[i]]));
      acc = static_cast<Acc>(acc + prod);
      for (size_t k = p.red_axes.size(); k-- > 0;) {
        size_t a = p.red_axes[k];
        for (size_t i = 0; i < n; ++i) off[i] += p.stride[i][a];
        if (++ri[k] < p.size[a]) break;
        for (size_t i = 0; i < n; ++i) off[i] -= p.stride[i][a] * p.size[a];
        ri[k] = 0;
      }
    }
    if constexpr (is_small_float_v<T>) dst[o] = from_double<T>(acc);
    else dst[o] = static_cast<T>(acc);
    for (size_t k = p.out_axes.size(); k-- > 0;) {
      size_t a = p.out_axes[k];
      for (size_t i = 0; i < n; ++i) base[i] += p.stride[i][a];
      if (++oi[k] < p.size[a]) break;
      for (size_t i = 0; i < n; ++i) base[i] -= p.stride[i][a] * p.size[a];
      oi[k] = 0;
    }
  }
}

void run_einsum(const std::string& equation, KernelContext& ctx) {
  const size_t n = ctx.num_inputs();
  if (n == 0) ctx.error("Einsum needs at least one input");
  std::vector<const Tensor*> ins;
  std::vector<Dims> dims;
  for (size_t i = 0; i < n; ++i) {
    ins.push_back(&ctx.input(i));
    if (ins.back()->dtype() != ins[0]->dtype()) ctx.error("inputs have different element types");
    dims.push_back(ins.back()->dims());
  }
  Equation e = parse_equation(equation, n);
  EinsumPlan p = make_einsum_plan(e, dims);
  Dims out;
  for (size_t a : p.out_axes) out.push_back(p.size[a]);
  Tensor& y = ctx.allocate_output(0, ins[0]->dtype(), out);
  if (product(out) == 0) return;
  visit_dtype(ins[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr ((std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || is_small_float_v<T>) compute<T>(p, ins, y);
    else ctx.error(cat("element type ", ins[0]->dtype(), " is not supported"));
  });
}

void infer_einsum(InferContext& ctx) {
  std::string equation = ctx.attrs.get_string("equation");
  const size_t n = ctx.num_inputs();
  Equation e = parse_equation(equation, n);
  if (n == 0 || !ctx.has_input(0)) return;
  DataType dt = ctx.input_dtype(0);
  std::vector<size_t> ranks;
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(i) || !ctx.input_type(i).shape.rank_known) {
      ctx.set_output(0, Type::tensor(dt));
      return;
    }
    ranks.push_back(ctx.input_type(i).shape.dims.size());
  }
  EinsumLayout l = layout_for(e, ranks);
  // Each axis's Dim: a static size wins, then a symbol, then unknown; a broadcast 1 of "..." ranks lowest.
  std::vector<Dim> axis_dim(l.ell_rank + 52);
  std::vector<int> prio(l.ell_rank + 52, -1);
  auto merge = [&](size_t axis, const Dim& d, bool ellipsis) {
    int pr = d.value ? ((ellipsis && *d.value == 1) ? 0 : 3) : (d.param.empty() ? 1 : 2);
    if (pr > prio[axis]) {
      prio[axis] = pr;
      axis_dim[axis] = d;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const auto& d = ctx.input_type(i).shape.dims;
    size_t pos = 0;
    for (int s : e.inputs[i]) {
      if (s == kEllipsis) {
        size_t er = l.term_ell_rank[i];
        for (size_t k = 0; k < er; ++k, ++pos) merge(l.ell_rank - er + k, d[pos], true);
        continue;
      }
      merge(l.ell_rank + static_cast<size_t>(s), d[pos], false);
      ++pos;
    }
  }
  for (size_t k = 0; k < l.ell_rank; ++k)
    if (prio[k] < 0) axis_dim[k] = known_dim(1);
  Type out = Type::tensor(dt);
  out.shape.rank_known = true;
  for (int s : e.output) {
    if (s == kEllipsis) {
      for (size_t k = 0; k < l.ell_rank; ++k) out.shape.dims.push_back(axis_dim[k]);
    } else {
      out.shape.dims.push_back(axis_dim[l.ell_rank + static_cast<size_t>(s)]);
    }
  }
  ctx.set_output(0, out);
}

}  // namespace

void register_einsum(Registry& r) {
  const std::vector<DataType> types = {D::UInt8, D::UInt16, D::UInt32, D::UInt64, D::Int8,  D::Int16,
                                       D::Int32, D::Int64,  D::Float16, D::Float, D::Double};
  auto kernel = [](const KernelInit& init) {
    std::string eq = init.attrs.get_string("equation");
    parse_equation(eq, init.input_types.size());
    return make_kernel([eq](KernelContext& ctx) { run_einsum(eq, ctx); });
  };
  r.add(OpDef{"", "Einsum", 12, {{{-1}, types}}, infer_einsum, kernel});
}

}  // namespace onyx::ops
