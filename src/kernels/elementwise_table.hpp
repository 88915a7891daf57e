// Internal to the elementwise kernels: the per-build function table that elementwise.cpp dispatches to. Each
// function works on one contiguous piece on the calling thread; elementwise.cpp splits large work over threads.
#pragma once
#include "kernels/elementwise.hpp"

namespace onyx::kernels::ew {

// What a reduction kernel folds: x, x squared less a shift, |x|, e^(x - shift), or the NaN-propagating max / min.
enum class ReduceOp { Sum, SumSquareDev, L1, SumExp, Max, Min };

struct Table {
  // y[i] = a[i * a_step] op b[i * b_step], steps 0 (one repeated value) or 1.
  void (*binary)(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* y, int64_t n);
  void (*unary)(const UnaryParams& p, const float* x, float* y, int64_t n);
  void (*softmax_row)(const float* x, float* y, int64_t len, bool log);
  void (*layer_norm_row)(const float* x, const float* scale, const float* bias, float* y, int64_t len, float eps,
                         float* mean, float* inv_std);
  // y = x * mul + add
  void (*affine)(const float* x, float* y, int64_t n, float mul, float add);
  // The op over x[0, len) (shift: see ReduceOp); sums in float blocks added up in double.
  double (*row_reduce)(ReduceOp op, const float* x, int64_t len, float shift);
  // out[j] = the op over x[r * stride + j] for r < rows, in float (shift: one value per column, null: 0).
  void (*col_reduce)(ReduceOp op, const float* x, int64_t rows, int64_t stride, int64_t n, const float* shift,
                     float* out);
  // y = (x - mean) * mul + add
  void (*norm_affine)(const float* x, float* y, int64_t n, float mean, float mul, float add);
};

// The table of the build in use (see use_isa).
const Table& active_table();

const Table& scalar_table();
const Table& avx2_table();
const Table& avx512_table();

}  // namespace onyx::kernels::ew
