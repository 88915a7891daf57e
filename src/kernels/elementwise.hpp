// Vectorized float32 kernels for elementwise ops, softmax and normalization: plain functions on float pointers and
// counts. Each has an AVX-512 build (elementwise_avx512.cpp), an AVX2+FMA build (elementwise_avx2.cpp) and a
// portable scalar build (elementwise.cpp); the best one the CPU supports is chosen once, at first use. Large arrays
// are split over the OpenMP team; small ones run on the calling thread.
//
// Accuracy of the vector math, against the exact function (checked by tests/kernels/elementwise_test.cpp over dense
// sweeps including large |x|, +-inf and NaN, for every build the CPU can run):
//   exp          <= 2 ulp; overflows to +inf above ln(FLT_MAX), gradual underflow to 0 below about -87.3
//   sigmoid      <= 4 ulp (1/(1+e^-x), and e^x/(1+e^x) below 0 so tiny results keep their relative precision)
//   tanh         <= 4 ulp (odd polynomial below |x| = 0.625, (1-e^-2|x|)/(1+e^-2|x|) above); saturates to +-1
//   erf          <= 4 ulp (odd polynomial below |x| = 1, 1 - e^-x^2 Q(1/x)/x above; exactly +-1 from |x| ~ 3.92)
//   gelu (erf)   relative error <= 1e-6 where |gelu(x)| >= FLT_MIN (the erfc form keeps negative x precise)
//   gelu (tanh)  error <= 2e-6 max(|gelu(x)|, 1e-5) (x * sigmoid(2 * inner), no cancellation; for x below about -5
//                the float rounding of inner, amplified by the exponential, limits the relative precision)
// NaN in gives NaN out for each of them (gelu(-inf) is NaN, -inf * 0, as in the reference formula). Results smaller
// than FLT_MIN in magnitude may lose relative precision.
#pragma once
#include <cstdint>
#include <vector>

namespace onyx::kernels {

enum class BinaryOp { Add, Sub, Mul, Div };

// Sqrt and Reciprocal are correctly rounded (IEEE square root and division), as the reference's double result
// rounded to float is.
enum class UnaryOp { Relu, LeakyRelu, Clip, Exp, Log, Sigmoid, Tanh, Erf, GeluErf, GeluTanh, Sqrt, Reciprocal };

// Parameters of a unary op: alpha for LeakyRelu, [lo, hi] for Clip (NaN stays NaN; lo > hi gives hi everywhere).
struct UnaryParams {
  UnaryOp op = UnaryOp::Relu;
  float alpha = 0.01f;
  float lo = 0.0f, hi = 0.0f;
};

// Which build runs. Scalar always works; the others only where __builtin_cpu_supports says so.
enum class Isa { Scalar, Avx2, Avx512 };
Isa active_isa();
// The best build this CPU supports.
Isa best_isa();
// For tests and benchmarks: use `isa` from now on (false, and no change, if the CPU lacks it). Not to be called
// while kernels run on other threads.
bool use_isa(Isa isa);
const char* isa_name(Isa isa);

// y = a op b over numpy-broadcast shapes: `out` is the broadcast of a_dims and b_dims (the caller has checked it).
// The broadcast collapses into an outer loop over an inner contiguous run in which each side is contiguous or one
// repeated value.
void binary(BinaryOp op, const float* a, const std::vector<int64_t>& a_dims, const float* b,
            const std::vector<int64_t>& b_dims, float* y, const std::vector<int64_t>& out);
// y[i] = a[i] op b[i] for n elements (y may be a or b).
void binary_same(BinaryOp op, const float* a, const float* b, float* y, int64_t n);

void unary(const UnaryParams& p, const float* x, float* y, int64_t n);

// Softmax (or LogSoftmax) of each of `rows` contiguous rows of `len` elements, subtracting the row's maximum.
void softmax(const float* x, float* y, int64_t rows, int64_t len, bool log);

// LayerNormalization of `rows` contiguous rows of `len` elements: y = (x - mean) / sqrt(var + eps) * scale + bias,
// scale and bias (null: none) with one value per row element. Two passes (mean, then squared deviations) in float.
// mean / inv_std (null: not wanted) receive one value per row.
void layer_norm(const float* x, const float* scale, const float* bias, float* y, int64_t rows, int64_t len, float eps,
                float* mean, float* inv_std);

// y = x * mul[c] + add[c] for x of shape [outer, channels, inner] (BatchNormalization in inference).
void channel_affine(const float* x, const float* mul, const float* add, float* y, int64_t outer, int64_t channels,
                    int64_t inner);

}  // namespace onyx::kernels
