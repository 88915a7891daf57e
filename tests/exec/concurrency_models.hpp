// Models that concurrency tests run from several threads at once (concurrent_runs_test.cpp, threads_stress.cpp).
#pragma once
#include <string>
#include <vector>

#include "opt/opt_test_util.hpp"

namespace onyx::testing {

// LSTM (hidden 16) then GRU (hidden 12) over x [S, B, 8], S and B free, so runs of different shapes share the
// session and each shape signature gets its own memory plan.
inline std::string recurrent_model() {
  GraphSpec g(17);
  g.input("x", DataType::Float, {-2, -1, 8});
  g.random("w1", {1, 64, 8}, -0.5f, 0.5f).random("r1", {1, 64, 16}, -0.5f, 0.5f).random("b1", {1, 128}, -0.2f, 0.2f);
  g.random("w2", {1, 36, 16}, -0.5f, 0.5f).random("r2", {1, 36, 12}, -0.5f, 0.5f).random("b2", {1, 72}, -0.2f, 0.2f);
  g.ints("axis1", {1}, {1});
  g.node("LSTM", {"x", "w1", "r1", "b1"}, {"y1", "h1"}, {{"hidden_size", 16}})
      .node("Squeeze", {"y1", "axis1"}, {"s1"})
      .node("GRU", {"s1", "w2", "r2", "b2"}, {"y2", "h2"}, {{"hidden_size", 12}, {"linear_before_reset", 1}})
      .node("ReduceMean", {"y2"}, {"m2"}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", 0}})
      .output("m2")
      .output("h1");
  return g.bytes();
}

// Convolutions (3x3, 1x1; with these sizes oneDNN picks Winograd for some), pooling and a matrix product: the
// kernels that go to oneDNN, over x [N, 16, 28, 28] with the batch N free.
inline std::string convolutional_model() {
  GraphSpec g(17);
  const std::vector<int64_t> pads1{1, 1, 1, 1};
  g.input("x", DataType::Float, {-1, 16, 28, 28}).random("w1", {32, 16, 3, 3}).random("b1", {32});
  g.random("w2", {32, 32, 3, 3}).random("w3", {16, 32, 1, 1}).random("fc", {16, 24});
  g.node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", pads1}})
      .node("Relu", {"c1"}, {"r1"})
      .node("Conv", {"r1", "w2"}, {"c2"}, {{"pads", pads1}})
      .node("Add", {"c2", "r1"}, {"s2"})
      .node("MaxPool", {"s2"}, {"p2"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Conv", {"p2", "w3"}, {"c3"})
      .node("GlobalAveragePool", {"c3"}, {"g3"})
      .node("Flatten", {"g3"}, {"f3"})
      .node("MatMul", {"f3", "fc"}, {"y"})
      .output("y");
  return g.bytes();
}

}  // namespace onyx::testing
