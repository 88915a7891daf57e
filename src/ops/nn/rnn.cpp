// ai.onnx RNN (1, 7, 14, 22), GRU (1, 3, 7, 14, 22), LSTM (1, 7, 14, 22).
// Inputs X, W, R, B, sequence_lens, initial_h (+ initial_c, P for LSTM); outputs Y, Y_h (+ Y_c for LSTM).
// Gate orders: GRU zrh, LSTM iofc (peepholes P: iof). B holds [Wb, Rb] per direction.
// Version differences:
//   v1: attribute output_sequence (Y is computed whenever it is wanted, so it changes nothing here).
//   GRU-3: linear_before_reset (GRU-1 has none: the reset gate is applied before the recurrent product).
//   v7: output_sequence removed. v14: `layout` (0: [seq, batch, ...], 1: [batch, seq, ...] for X, Y, Y_h, Y_c,
//   initial_h, initial_c). v22: bfloat16.
// Activations (case-insensitive names): Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
// HardSigmoid, Elu, Softsign, Softplus. activation_alpha/beta are consumed in order by the functions that take
// them; a function without a value in the list uses its ONNX operator's default. A bidirectional node lists the
// forward functions then the reverse ones (a single per-direction list is used for both directions).
// clip bounds every activation input to [-clip, clip]. sequence_lens: rows past a batch entry's length are 0 in
// Y, and Y_h/Y_c hold the state after its last valid step (the reverse direction starts at length-1).
// LSTM input_forget couples the gates: f = 1 - i. Computation is in double.
// Fast kernels: a float32 LSTM or GRU with constant W, R (and B, P when given), default activations, no clip and
// no input_forget runs kernels/rnn.hpp (oneDNN products and a vectorized cell), weights packed at session
// creation; runs it cannot take (other weights fed, sequence_lens shorter than the sequence, odd shapes) go to the
// reference.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "kernels/rnn.hpp"
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

enum class Cell { Rnn, Gru, Lstm };

int gate_count(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }
int acts_per_direction(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 2 : 3; }
const char* cell_name(Cell c) { return c == Cell::Rnn ? "RNN" : c == Cell::Gru ? "GRU" : "LSTM"; }

struct Activation {
  enum class Kind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Kind::Tanh;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case Kind::Relu: return x > 0 ? x : 0.0;
      case Kind::Tanh: return std::tanh(x);
      case Kind::Sigmoid: return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
      case Kind::Affine: return alpha * x + beta;
      case Kind::LeakyRelu: return x >= 0 ? x : alpha * x;
      case Kind::ThresholdedRelu: return x > alpha ? x : 0.0;
      case Kind::ScaledTanh: return alpha * std::tanh(beta * x);
      case Kind::HardSigmoid: return std::max(0.0, std::min(1.0, alpha * x + beta));
      case Kind::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case Kind::Softsign: return x / (1.0 + std::fabs(x));
      case Kind::Softplus: return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

std::string lowercase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Builds the activation `name`, taking alpha/beta from the lists (advancing the positions) when it uses them.
Activation make_activation(const std::string& name, const std::vector<float>& alphas, size_t& ai,
                           const std::vector<float>& betas, size_t& bi) {
  using K = Activation::Kind;
  struct Entry {
    const char* name;
    K kind;
    bool has_alpha, has_beta;
    double alpha, beta;
  };
  static const Entry table[] = {
      {"relu", K::Relu, false, false, 0, 0},
      {"tanh", K::Tanh, false, false, 0, 0},
      {"sigmoid", K::Sigmoid, false, false, 0, 0},
      {"affine", K::Affine, true, true, 1.0, 0.0},
      {"leakyrelu", K::LeakyRelu, true, false, 0.01, 0},
      {"thresholdedrelu", K::ThresholdedRelu, true, false, 1.0, 0},
      {"scaledtanh", K::ScaledTanh, true, true, 1.0, 1.0},
      {"hardsigmoid", K::HardSigmoid, true, true, 0.2, 0.5},
      {"elu", K::Elu, true, false, 1.0, 0},
      {"softsign", K::Softsign, false, false, 0, 0},
      {"softplus", K::Softplus, false, false, 0, 0},
  };
  const std::string key = lowercase(name);
  for (const Entry& e : table) {
    if (key != e.name) continue;
    Activation a;
    a.kind = e.kind;
    a.alpha = e.alpha;
    a.beta = e.beta;
    if (e.has_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (e.has_beta && bi < betas.size()) a.beta = betas[bi++];
    return a;
  }
  fail("activation '", name, "' is not supported");
}

struct RnnConfig {
  Cell cell = Cell::Rnn;
  int version = 1;
  std::optional<int64_t> hidden_size;
  int num_dirs = 1;
  bool reverse = false;  // direction == "reverse"
  std::vector<Activation> acts;  // acts_per_direction * num_dirs
  std::optional<double> clip;
  bool linear_before_reset = false;
  bool input_forget = false;
  int64_t layout = 0;
};

// Direction attribute -> (num_directions, reverse).
std::pair<int, bool> parse_direction(const AttributeView& a) {
  std::string dir = a.get_string("direction", "forward");
  if (dir == "forward") return {1, false};
  if (dir == "reverse") return {1, true};
  if (dir == "bidirectional") return {2, false};
  fail("direction '", dir, "' is not one of forward, reverse, bidirectional");
}

int64_t parse_layout(const AttributeView& a, int version) {
  if (version < 14) return 0;
  int64_t layout = a.get_int("layout", 0);
  if (layout != 0 && layout != 1) fail("layout ", layout, " is not 0 or 1");
  return layout;
}

RnnConfig parse_config(Cell cell, int version, const AttributeView& a) {
  RnnConfig c;
  c.cell = cell;
  c.version = version;
  if (a.has("hidden_size")) {
    int64_t h = a.get_int("hidden_size");
    if (h <= 0) fail("hidden_size ", h, " must be positive");
    c.hidden_size = h;
  }
  std::tie(c.num_dirs, c.reverse) = parse_direction(a);
  if (a.has("clip")) {
    float clip = a.get_float("clip");
    if (!(clip > 0)) fail("clip ", clip, " must be positive");
    c.clip = clip;
  }
  if (cell == Cell::Gru && version >= 3) c.linear_before_reset = a.get_int("linear_before_reset", 0) != 0;
  if (cell == Cell::Lstm) c.input_forget = a.get_int("input_forget", 0) != 0;
  c.layout = parse_layout(a, version);

  const size_t per = static_cast<size_t>(acts_per_direction(cell));
  std::vector<std::string> names;
  if (a.has("activations")) {
    names = a.get_strings("activations");
  } else {
    for (int d = 0; d < c.num_dirs; ++d) {
      if (cell == Cell::Rnn) names.push_back("Tanh");
      else if (cell == Cell::Gru) names.insert(names.end(), {"Sigmoid", "Tanh"});
      else names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  }
  if (names.size() != per * c.num_dirs && !(c.num_dirs == 2 && names.size() == per))
    fail(cell_name(cell), " needs ", per * c.num_dirs, " activations, got ", names.size());
  std::vector<float> alphas = a.get_floats("activation_alpha", std::vector<float>{});
  std::vector<float> betas = a.get_floats("activation_beta", std::vector<float>{});
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) c.acts.push_back(make_activation(n, alphas, ai, betas, bi));
  if (c.acts.size() < per * c.num_dirs) c.acts.insert(c.acts.end(), c.acts.begin(), c.acts.end());
  return c;
}

void expect_dims(const Tensor& t, const Dims& want, const char* what) {
  if (t.dims() != want)
    fail(what, " has shape ", shape_of(t.dims()).to_string(), ", expected ", shape_of(want).to_string());
}

void run_cell(const RnnConfig& c, KernelContext& ctx) {
  const Tensor& x_t = ctx.input(0);
  const Tensor& w_t = ctx.input(1);
  const Tensor& r_t = ctx.input(2);
  const DataType dt = x_t.dtype();
  if (w_t.dtype() != dt || r_t.dtype() != dt) ctx.error("X, W and R must have the same element type");
  if (x_t.dims().size() != 3) ctx.error(cat("X must have rank 3, got ", shape_of(x_t.dims()).to_string()));
  if (w_t.dims().size() != 3) ctx.error(cat("W must have rank 3, got ", shape_of(w_t.dims()).to_string()));
  const int64_t G = gate_count(c.cell);
  const int64_t S = c.layout == 0 ? x_t.dims()[0] : x_t.dims()[1];
  const int64_t B = c.layout == 0 ? x_t.dims()[1] : x_t.dims()[0];
  const int64_t I = x_t.dims()[2];
  const int64_t ND = c.num_dirs;
  if (w_t.dims()[0] != ND) ctx.error(cat("W has ", w_t.dims()[0], " directions, the direction attribute needs ", ND));
  if (w_t.dims()[1] % G != 0) ctx.error(cat("W dim 1 (", w_t.dims()[1], ") is not a multiple of ", G));
  const int64_t H = w_t.dims()[1] / G;
  if (c.hidden_size && *c.hidden_size != H)
    ctx.error(cat("hidden_size ", *c.hidden_size, " does not match W's ", G, "*", H));
  if (w_t.dims()[2] != I) ctx.error(cat("W input size ", w_t.dims()[2], " does not match X's ", I));
  expect_dims(r_t, {ND, G * H, H}, "R");

  const auto optional_input = [&](size_t i) -> const Tensor* {
    if (!ctx.has_input(i)) return nullptr;
    const Tensor& t = ctx.input(i);
    if (i != 4 && t.dtype() != dt) ctx.error(cat("input ", i, " must have the element type of X (", dt, ")"));
    return &t;
  };
  const Tensor* b_t = optional_input(3);
  const Tensor* len_t = optional_input(4);
  const Tensor* h0_t = optional_input(5);
  const Tensor* c0_t = c.cell == Cell::Lstm ? optional_input(6) : nullptr;
  const Tensor* p_t = c.cell == Cell::Lstm ? optional_input(7) : nullptr;
  const Dims state_dims = c.layout == 0 ? Dims{ND, B, H} : Dims{B, ND, H};
  if (b_t) expect_dims(*b_t, {ND, 2 * G * H}, "B");
  if (h0_t) expect_dims(*h0_t, state_dims, "initial_h");
  if (c0_t) expect_dims(*c0_t, state_dims, "initial_c");
  if (p_t) expect_dims(*p_t, {ND, 3 * H}, "P");
  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (len_t) {
    expect_dims(*len_t, {B}, "sequence_lens");
    lens = read_ints(*len_t);
    for (int64_t v : lens)
      if (v < 0 || v > S) ctx.error(cat("sequence_lens value ", v, " is outside [0, ", S, "]"));
  }

  const int64_t y_size = static_cast<int64_t>(check_data_sized({S, ND, B, H}));
  const int64_t state_size = static_cast<int64_t>(check_data_sized({ND, B, H}));
  const std::vector<double> X = read_doubles(x_t);
  const std::vector<double> W = read_doubles(w_t);
  const std::vector<double> R = read_doubles(r_t);
  const std::vector<double> Bv = b_t ? read_doubles(*b_t) : std::vector<double>(static_cast<size_t>(ND * 2 * G * H), 0.0);
  const std::vector<double> P = p_t ? read_doubles(*p_t) : std::vector<double>(static_cast<size_t>(ND * 3 * H), 0.0);
  const std::vector<double> H0 = h0_t ? read_doubles(*h0_t) : std::vector<double>(static_cast<size_t>(state_size), 0.0);
  const std::vector<double> C0 = c0_t ? read_doubles(*c0_t) : std::vector<double>(static_cast<size_t>(state_size), 0.0);

  std::vector<double> Y(static_cast<size_t>(y_size), 0.0), Yh(static_cast<size_t>(state_size), 0.0),
      Yc(static_cast<size_t>(state_size), 0.0);
  const auto x_off = [&](int64_t t, int64_t b) { return c.layout == 0 ? (t * B + b) * I : (b * S + t) * I; };
  const auto y_off = [&](int64_t t, int64_t d, int64_t b) {
    return c.layout == 0 ? ((t * ND + d) * B + b) * H : ((b * S + t) * ND + d) * H;
  };
  const auto s_off = [&](int64_t d, int64_t b) { return c.layout == 0 ? (d * B + b) * H : (b * ND + d) * H; };
  const auto clip = [&](double v) { return c.clip ? std::clamp(v, -*c.clip, *c.clip) : v; };

  const size_t per = static_cast<size_t>(acts_per_direction(c.cell));
  std::vector<double> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H)), h(static_cast<size_t>(H)),
      cs(static_cast<size_t>(H)), tmp(static_cast<size_t>(H)), gate_r(static_cast<size_t>(H));
  for (int64_t d = 0; d < ND; ++d) {
    const bool rev = c.reverse || d == 1;
    const Activation& f = c.acts[d * per];
    const Activation& g = per > 1 ? c.acts[d * per + 1] : f;
    const Activation& hact = per > 2 ? c.acts[d * per + 2] : f;
    const double* Wd = W.data() + d * G * H * I;
    const double* Rd = R.data() + d * G * H * H;
    const double* Wb = Bv.data() + d * 2 * G * H;
    const double* Rb = Wb + G * H;
    const double* Pd = P.data() + d * 3 * H;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t j = 0; j < H; ++j) {
        h[j] = H0[s_off(d, b) + j];
        cs[j] = C0[s_off(d, b) + j];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        const double* xv = X.data() + x_off(t, b);
        // Input and recurrent products of every gate row, biases included.
        for (int64_t row = 0; row < G * H; ++row) {
          double sx = Wb[row], sh = Rb[row];
          const double* wr = Wd + row * I;
          for (int64_t k = 0; k < I; ++k) sx += xv[k] * wr[k];
          const double* rr = Rd + row * H;
          for (int64_t k = 0; k < H; ++k) sh += h[k] * rr[k];
          xw[row] = sx;
          hr[row] = sh;
        }
        if (c.cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j) h[j] = f(clip(xw[j] + hr[j]));
        } else if (c.cell == Cell::Gru) {
          // z = gate 0, r = gate 1, h = gate 2.
          for (int64_t j = 0; j < H; ++j) gate_r[j] = f(clip(xw[H + j] + hr[H + j]));
          for (int64_t j = 0; j < H; ++j) {
            double cand;
            if (c.linear_before_reset) {
              cand = g(clip(xw[2 * H + j] + gate_r[j] * hr[2 * H + j]));
            } else {
              // (r . h) Rh^T + Rbh
              double s = Rb[2 * H + j];
              const double* rr = Rd + (2 * H + j) * H;
              for (int64_t k = 0; k < H; ++k) s += gate_r[k] * h[k] * rr[k];
              cand = g(clip(xw[2 * H + j] + s));
            }
            tmp[j] = cand;
          }
          for (int64_t j = 0; j < H; ++j) {
            const double z = f(clip(xw[j] + hr[j]));
            h[j] = (1.0 - z) * tmp[j] + z * h[j];
          }
        } else {
          // i = gate 0, o = gate 1, f = gate 2, c = gate 3; peepholes i, o, f.
          for (int64_t j = 0; j < H; ++j) {
            const double ig = f(clip(xw[j] + hr[j] + Pd[j] * cs[j]));
            double fg = f(clip(xw[2 * H + j] + hr[2 * H + j] + Pd[2 * H + j] * cs[j]));
            if (c.input_forget) fg = 1.0 - ig;
            const double cand = g(clip(xw[3 * H + j] + hr[3 * H + j]));
            const double cn = fg * cs[j] + ig * cand;
            const double og = f(clip(xw[H + j] + hr[H + j] + Pd[H + j] * cn));
            cs[j] = cn;
            tmp[j] = og * hact(cn);
          }
          for (int64_t j = 0; j < H; ++j) h[j] = tmp[j];
        }
        for (int64_t j = 0; j < H; ++j) Y[y_off(t, d, b) + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh[s_off(d, b) + j] = h[j];
        Yc[s_off(d, b) + j] = cs[j];
      }
    }
  }
  const Dims y_dims = c.layout == 0 ? Dims{S, ND, B, H} : Dims{B, S, ND, H};
  if (ctx.output_wanted(0)) store_doubles(ctx.allocate_output(0, dt, y_dims), Y);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) store_doubles(ctx.allocate_output(1, dt, state_dims), Yh);
  if (c.cell == Cell::Lstm && ctx.num_outputs() > 2 && ctx.output_wanted(2))
    store_doubles(ctx.allocate_output(2, dt, state_dims), Yc);
}

void infer_cell(Cell cell, int version, InferContext& ctx) {
  const DataType dt = ctx.input_dtype(0);
  const int64_t G = gate_count(cell);
  auto [nd, reverse] = parse_direction(ctx.attrs);
  (void)reverse;
  const int64_t layout = parse_layout(ctx.attrs, version);
  for (size_t i : {size_t{1}, size_t{2}}) {
    const DataType o = ctx.input_dtype(i);
    if (dt != DataType::Undefined && o != DataType::Undefined && o != dt)
      ctx.error(cat("X, W and R must have the same element type, got ", dt, " and ", o));
  }
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    const int64_t r = input_rank(ctx, i);
    if (r >= 0 && r != 3) ctx.error(cat("input ", i, " must have rank 3, got rank ", r));
  }
  if (auto w0 = dim_of(ctx, 1, 0).value; w0 && *w0 != nd)
    ctx.error(cat("W has ", *w0, " directions, the direction attribute needs ", nd));
  Dim hidden;
  if (ctx.attrs.has("hidden_size")) hidden = known_dim(ctx.attrs.get_int("hidden_size"));
  else if (auto r2 = dim_of(ctx, 2, 2); r2.value || !r2.param.empty()) hidden = r2;
  else if (auto w1 = dim_of(ctx, 1, 1).value; w1 && *w1 % G == 0) hidden = known_dim(*w1 / G);
  if (hidden.value && *hidden.value <= 0) ctx.error(cat("hidden_size ", *hidden.value, " must be positive"));
  const Dim seq = dim_of(ctx, 0, layout == 0 ? 0 : 1);
  const Dim batch = dim_of(ctx, 0, layout == 0 ? 1 : 0);
  const Dim dirs = known_dim(nd);
  const Shape y = layout == 0 ? shape_from({seq, dirs, batch, hidden}) : shape_from({batch, seq, dirs, hidden});
  const Shape state = layout == 0 ? shape_from({dirs, batch, hidden}) : shape_from({batch, dirs, hidden});
  const bool x_known = input_rank(ctx, 0) == 3;
  ctx.set_output(0, Type::tensor(dt, x_known ? y : Shape{}));
  ctx.set_output(1, Type::tensor(dt, x_known ? state : Shape{}));
  if (cell == Cell::Lstm) ctx.set_output(2, Type::tensor(dt, x_known ? state : Shape{}));
}

// LSTM or GRU with their default gate functions (LSTM sigmoid, tanh, tanh; GRU sigmoid, tanh, in every direction),
// no clip and no coupled LSTM gates: what kernels/rnn.hpp computes.
bool fast_config(const RnnConfig& c) {
  if (c.cell == Cell::Rnn || c.clip || c.input_forget) return false;
  const size_t per = static_cast<size_t>(acts_per_direction(c.cell));
  for (size_t i = 0; i < c.acts.size(); ++i)
    if (c.acts[i].kind != (i % per == 0 ? Activation::Kind::Sigmoid : Activation::Kind::Tanh)) return false;
  return true;
}

bool same_bytes(const Tensor& a, const Tensor* b) { return b && a.bytes().data() == b->bytes().data(); }

kernels::RnnDirection fast_direction(const RnnConfig& c) {
  if (c.num_dirs == 2) return kernels::RnnDirection::Bidirectional;
  return c.reverse ? kernels::RnnDirection::Reverse : kernels::RnnDirection::Forward;
}

// The fast LSTM (Packed = kernels::PackedLstm) or GRU (kernels::PackedGru) with its packed constant weights.
template <class Packed>
class FastCell : public Kernel {
 public:
  // b: B or null; p: LSTM peepholes or null.
  FastCell(RnnConfig c, const Tensor& w, const Tensor& r, const Tensor* b, const Tensor* p, Packed packed)
      : c_(std::move(c)), w_(w), r_(r), b_(b), p_(p), packed_(std::move(packed)) {}

  // For an X of static shape: the primitives are made now rather than in the first run.
  void prepare(const Dims& x_dims) {
    if (x_dims.size() == 3 && x_dims[2] == packed_.input_size() && x_dims[0] > 0 && x_dims[1] > 0)
      packed_.prepare(c_.layout == 0 ? x_dims[0] : x_dims[1], c_.layout == 0 ? x_dims[1] : x_dims[0]);
  }

  void run(KernelContext& ctx) override {
    if (!usable(ctx)) return run_cell(c_, ctx);  // computes, or reports bad input as the reference does
    const Tensor& x = ctx.input(0);
    const int64_t S = c_.layout == 0 ? x.dims()[0] : x.dims()[1];
    const int64_t B = c_.layout == 0 ? x.dims()[1] : x.dims()[0];
    const int64_t ND = c_.num_dirs, H = packed_.hidden_size();
    const Dims state_dims = c_.layout == 0 ? Dims{ND, B, H} : Dims{B, ND, H};
    const bool lstm = c_.cell == Cell::Lstm;
    kernels::RnnIo io;
    io.x = x.data<float>();
    if (ctx.has_input(5)) io.h0 = ctx.input(5).data<float>();
    if (lstm && ctx.num_inputs() > 6 && ctx.has_input(6)) io.c0 = ctx.input(6).data<float>();
    const auto wanted = [&](size_t i) { return ctx.num_outputs() > i && ctx.output_wanted(i); };
    if (wanted(0))
      io.y = ctx.allocate_output(0, DataType::Float, c_.layout == 0 ? Dims{S, ND, B, H} : Dims{B, S, ND, H})
                 .mutable_data<float>();
    if (wanted(1)) io.yh = ctx.allocate_output(1, DataType::Float, state_dims).mutable_data<float>();
    if (lstm && wanted(2)) io.yc = ctx.allocate_output(2, DataType::Float, state_dims).mutable_data<float>();
    packed_.run(S, B, c_.layout == 1, io);
  }

 private:
  // Whether this run's inputs are the packed constants and shapes the kernel takes.
  bool usable(const KernelContext& ctx) const {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::Float || x.dims().size() != 3 || x.dims()[2] != packed_.input_size()) return false;
    const int64_t S = c_.layout == 0 ? x.dims()[0] : x.dims()[1];
    const int64_t B = c_.layout == 0 ? x.dims()[1] : x.dims()[0];
    if (S <= 0 || B <= 0) return false;
    if (!same_bytes(ctx.input(1), &w_) || !same_bytes(ctx.input(2), &r_)) return false;
    const auto given = [&](size_t i) { return ctx.num_inputs() > i && ctx.has_input(i); };
    if (given(3) ? !same_bytes(ctx.input(3), b_) : b_ != nullptr) return false;
    if (c_.cell == Cell::Lstm && (given(7) ? !same_bytes(ctx.input(7), p_) : p_ != nullptr)) return false;
    if (given(4)) {
      const Tensor& lens = ctx.input(4);
      if (lens.dtype() != DataType::Int32 || lens.dims() != Dims{B}) return false;
      for (int64_t i = 0; i < B; ++i)
        if (lens.data<int32_t>()[i] != S) return false;
    }
    const Dims state_dims = c_.layout == 0 ? Dims{c_.num_dirs, B, packed_.hidden_size()}
                                           : Dims{B, c_.num_dirs, packed_.hidden_size()};
    for (size_t i : {size_t{5}, size_t{6}}) {
      if (i == 6 && c_.cell != Cell::Lstm) break;
      if (given(i) && (ctx.input(i).dtype() != DataType::Float || ctx.input(i).dims() != state_dims)) return false;
    }
    return true;
  }

  RnnConfig c_;
  const Tensor& w_;
  const Tensor& r_;
  const Tensor* b_;
  const Tensor* p_;
  Packed packed_;
};

// The fast LSTM/GRU when the node and its constant inputs allow it, else null.
std::unique_ptr<Kernel> fast_cell(const RnnConfig& c, const KernelInit& init) {
  if (init.reference_only || !fast_config(c)) return nullptr;
  const auto given = [&](size_t i) { return i < init.node.inputs.size() && init.node.inputs[i] != nullptr; };
  const auto float_const = [&](size_t i, const Dims& dims) {
    const Tensor* t = init.input_value(i);
    return t && t->dtype() == DataType::Float && t->dims() == dims ? t : nullptr;
  };
  const int64_t G = gate_count(c.cell), ND = c.num_dirs;
  const Tensor* w = init.input_value(1);
  if (!w || w->dtype() != DataType::Float || w->dims().size() != 3) return nullptr;
  const int64_t H = w->dims()[1] / G, I = w->dims()[2];
  if (w->dims()[0] != ND || w->dims()[1] % G != 0 || H <= 0 || I <= 0 || (c.hidden_size && *c.hidden_size != H))
    return nullptr;
  const Tensor* r = float_const(2, {ND, G * H, H});
  const Tensor* b = given(3) ? float_const(3, {ND, 2 * G * H}) : nullptr;
  const bool lstm = c.cell == Cell::Lstm;
  const Tensor* p = lstm && given(7) ? float_const(7, {ND, 3 * H}) : nullptr;
  if (!r || (given(3) && !b) || (lstm && given(7) && !p)) return nullptr;
  const float* bp = b ? b->data<float>() : nullptr;
  const auto finish = [&](auto k) -> std::unique_ptr<Kernel> {
    if (!init.input_types.empty() && init.input_types[0]) {
      if (std::optional<Dims> x_dims = static_dims(*init.input_types[0])) k->prepare(*x_dims);
    }
    return k;
  };
  if (lstm)
    return finish(std::make_unique<FastCell<kernels::PackedLstm>>(
        c, *w, *r, b, p,
        kernels::PackedLstm(w->data<float>(), r->data<float>(), bp, p ? p->data<float>() : nullptr,
                            fast_direction(c), I, H)));
  return finish(std::make_unique<FastCell<kernels::PackedGru>>(
      c, *w, *r, b, nullptr,
      kernels::PackedGru(w->data<float>(), r->data<float>(), bp, c.linear_before_reset, fast_direction(c), I, H)));
}

void add_cell(Registry& r, Cell cell, std::initializer_list<int> versions) {
  const std::vector<DataType> v1 = {D::Float16, D::Float, D::Double};
  const std::vector<DataType> v22 = {D::BFloat16, D::Float16, D::Float, D::Double};
  const std::vector<int> t_inputs = cell == Cell::Lstm ? std::vector<int>{0, 1, 2, 3, 5, 6, 7} : std::vector<int>{0, 1, 2, 3, 5};
  for (int v : versions) {
    std::vector<TypeConstraint> types = {{t_inputs, v >= 22 ? v22 : v1}, {{4}, {D::Int32}}};
    add_versions(
        r, "", cell_name(cell), {v}, types, [cell, v](InferContext& ctx) { infer_cell(cell, v, ctx); },
        [cell, v](const KernelInit& init) {
          RnnConfig c = parse_config(cell, v, init.attrs);
          if (std::unique_ptr<Kernel> fast = fast_cell(c, init)) return fast;
          return make_kernel([c](KernelContext& ctx) { run_cell(c, ctx); });
        });
  }
}

}  // namespace

void register_rnn(Registry& r) {
  add_cell(r, Cell::Rnn, {1, 7, 14, 22});
  add_cell(r, Cell::Gru, {1, 3, 7, 14, 22});
  add_cell(r, Cell::Lstm, {1, 7, 14, 22});
  r.set_fast_kernels("", "LSTM", {"float32 with constant weights: all time steps projected in one product, vectorized gates"});
  r.set_fast_kernels("", "GRU", {"float32 with constant weights: all time steps projected in one product, vectorized gates"});
}

}  // namespace onyx::ops
