// MatMulInteger's kernels with the int32 product scaled into float32, for ai.onyx MatMulIntegerToFloat
// (ops/fused/matmul_integer_to_float.cpp), which stands for MatMulInteger -> Cast -> Mul -> Add: the product's
// loops and the packed integer GEMM are MatMulInteger's, only the scale and bias are the fused op's inputs.
#pragma once
#include <cstdint>
#include <memory>

#include "ops/registry.hpp"

namespace onyx::ops {

// y = float(product) * scale + bias, column by column: scale one value or one per column, bias one per column or
// none (null).
struct IntegerToFloat {
  const float* scale = nullptr;
  bool per_column = false;
  const float* bias = nullptr;
};

// Reads a node's IntegerToFloat for a product of N columns and rank `rank`, failing where its inputs do not fit.
using ReadIntegerToFloat = IntegerToFloat (*)(KernelContext& ctx, int64_t N, size_t rank);

// The reference: MatMulInteger's loops on inputs 0-3 (A, B, a_zero_point, b_zero_point), then the product written
// as float32 scaled by what `read` gives, rounded after the product and after the sum.
void run_matmul_integer_to_float(KernelContext& ctx, ReadIntegerToFloat read);

// The fast kernel: MatMulInteger's packed integer GEMM (a constant B packed at creation) with the scaling in its
// registers; the reference where it does not apply.
std::unique_ptr<Kernel> make_fast_matmul_integer_to_float(const KernelInit& init, ReadIntegerToFloat read);

}  // namespace onyx::ops
