// Vectorized float32 reductions (ReduceSum and the others) and GroupNormalization / InstanceNormalization, on the
// builds of kernels/elementwise.hpp (AVX-512, AVX2, scalar; chosen there, use_isa switches them too).
//
// Reductions: the axes are merged into groups of neighbouring reduced or kept axes (dims of 1 dropped). When the
// innermost group is reduced, each output folds contiguous rows; when it is kept, each output row folds whole
// rows of the inner group, vectorized across the columns. Groups further out become loops around those two.
//
// Accuracy of the sums (Sum, Mean, SumSquare, L1, L2, LogSum, the exponentials of LogSumExp): partial sums run in
// float over at most 64 additions in sequence (a row: four registers of N lanes taking 32 elements each, then the
// registers and lanes added as a tree; columns: blocks of 64 rows), and the partial sums are added up in double. So
// |sum - exact| <= 64 * 2^-24 * (sum of |terms|), plus the final rounding to float, whatever the length; the
// reference kernels accumulate in double. The terms themselves: x*x and |x| are rounded once, e^(x - max) has the
// error of kernels::unary's exp (<= 2 ulp). Max and Min are exact; a NaN anywhere in the reduced set gives NaN, and
// among equal values of different sign (0 and -0) either may be returned.
#pragma once
#include <cstdint>
#include <vector>

namespace onyx::kernels {

enum class Reduction { Sum, Mean, Max, Min, SumSquare, L1, L2, LogSum, LogSumExp };

// Reduces x (shape `dims`) over the axes flagged in `reduced` (one flag per axis) into y, which holds the kept axes
// in order. An empty reduced set (some reduced dim is 0) gives Sum, SumSquare, L1, L2: 0; Mean: NaN (0/0); Max,
// LogSum, LogSumExp: -inf; Min: +inf. With no axis flagged every output is the op applied to one element.
void reduce(Reduction r, const float* x, const std::vector<int64_t>& dims, const std::vector<bool>& reduced, float* y);

// GroupNormalization of x of shape [N, C, inner] in `groups` groups of C / groups channels (the caller has checked
// that groups divides C): per (n, group) the mean (one pass), the variance (a second pass over the deviations), then
// y = (x - mean) * (inv_std * scale) + bias in one pass. scale and bias hold C values (per_channel) or `groups`
// values. InstanceNormalization is groups = C. The statistics carry the sums' accuracy above.
void group_norm(const float* x, const float* scale, const float* bias, bool per_channel, float* y, int64_t N,
                int64_t C, int64_t groups, int64_t inner, double eps);

}  // namespace onyx::kernels
