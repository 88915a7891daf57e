// The float 2-D MaxPool / AveragePool fast path shared by the NCHW pools (pool.cpp) and the channels-last ones
// (fused/channels_last.cpp): ONNX's window (auto_pad, pads, ceil_mode, dilations) as a oneDNN pooling shape,
// and one primitive per shape.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "kernels/pool.hpp"
#include "ops/nn/window.hpp"

namespace onyx::ops::nn {

// The oneDNN shape for input (N, C, H, W); nullopt when ONNX's window has no exact oneDNN equivalent (a window
// ONNX would not make, or ceil_mode adding positions that count_include_pad would count in oneDNN only).
inline std::optional<kernels::PoolShape> onednn_pool_shape(const WindowAttrs& attrs, kernels::PoolShape::Kind kind,
                                                           bool channels_last, int64_t N, int64_t C, int64_t H,
                                                           int64_t W) {
  if (attrs.kernel.size() != 2 || N <= 0 || C <= 0) return std::nullopt;
  Window g;
  try {
    g = make_window(attrs, {H, W});
  } catch (const Error&) {
    return std::nullopt;  // the reference reports it
  }
  kernels::PoolShape s;
  s.kind = kind;
  s.channels_last = channels_last;
  s.N = N;
  s.C = C;
  s.in = {H, W};
  s.out = {g.out[0], g.out[1]};
  s.kernel = {g.kernel[0], g.kernel[1]};
  s.strides = {g.strides[0], g.strides[1]};
  s.dilations = {g.dilations[0], g.dilations[1]};
  s.pads = {g.pads[0], g.pads[1], g.pads[2], g.pads[3]};
  for (int i = 0; i < 2; ++i) {
    // The end padding oneDNN needs for this output size; with ceil_mode it may exceed the declared one.
    const int64_t span = (s.kernel[i] - 1) * s.dilations[i] + 1;
    const int64_t need = (s.out[i] - 1) * s.strides[i] + span - s.in[i] - s.pads[i];
    // Past the declared pads ONNX's average never counts positions; oneDNN's include-padding would.
    if (need > s.pads[i + 2] && kind == kernels::PoolShape::Kind::AverageIncludePad) return std::nullopt;
    // Below zero the last input rows are in no window: no end padding gives the same output size.
    const int64_t end = std::max<int64_t>(need, 0);
    if ((s.in[i] + s.pads[i] + end - span) / s.strides[i] + 1 != s.out[i]) return std::nullopt;
    s.pads[i + 2] = end;
  }
  return s;
}

// Pooling primitives by shape, made on first use; safe for concurrent runs.
class PoolCache {
 public:
  const kernels::Pool2d& get(const kernels::PoolShape& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(s.key());
    if (it == pools_.end()) it = pools_.emplace(s.key(), std::make_unique<kernels::Pool2d>(s)).first;
    return *it->second;
  }

 private:
  std::mutex mutex_;
  std::map<decltype(kernels::PoolShape{}.key()), std::unique_ptr<kernels::Pool2d>> pools_;
};

}  // namespace onyx::ops::nn
