// The arithmetic of a run, counted from a profile: 2 operations per multiply-add of the matrix products and
// convolutions, the ops that hold nearly all the work of networks (MatMul, Gemm, Conv, ConvTranspose, their fused,
// channels-last and integer forms, and attention). Other ops count 0.
#pragma once
#include <vector>

#include "onyx/session.hpp"

namespace onyx::cli {

double node_flops(const NodeTiming& t);
double run_flops(const std::vector<NodeTiming>& profile);

}  // namespace onyx::cli
