// Small helpers for the nn op tests (matmul, conv, pool, normalization, softmax, dropout).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "op_test_util.hpp"

namespace onyx::testing {

using Dims = std::vector<int64_t>;

inline Tensor ftensor(std::vector<int64_t> dims, const std::vector<float>& v) {
  return make_tensor<float>(DataType::Float, std::move(dims), v);
}

inline std::vector<float> floats(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DataType::Float);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// Runs `f` and expects an onyx::Error whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace onyx::testing
