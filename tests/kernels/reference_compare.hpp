// Fast kernels against their op's reference kernel: the session options that pick the reference kernels, and one
// comparison of a node's outputs under both.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_test_util.hpp"

namespace onyx::testing {

inline SessionOptions reference_only() {
  SessionOptions o;
  o.reference_kernels = true;
  return o;
}

// Runs the node with fast kernels and with reference kernels. Outputs have the same types and dims; other than
// float32 and string outputs are byte-identical; float32
// elements agree within `rel` of the larger of the reference's magnitude and `floor` (rel 0: bit-exact), with NaN
// where the reference has NaN and the same infinity where it has one.
inline void compare_with_reference(OneNode node, const std::string& what, double rel, double floor = 1e-30) {
  OneNode ref = node;
  const std::vector<Datum> fast = node.run();
  const std::vector<Datum> want = ref.options(reference_only()).run();
  ASSERT_EQ(fast.size(), want.size()) << what;
  for (size_t o = 0; o < want.size(); ++o) {
    const Tensor& f = fast[o].tensor;
    const Tensor& r = want[o].tensor;
    ASSERT_EQ(f.dtype(), r.dtype()) << what;
    ASSERT_EQ(f.dims(), r.dims()) << what << " output " << o;
    if (f.dtype() == DataType::String) {
      ASSERT_EQ(f.string_values(), r.string_values()) << what << " output " << o;
      continue;
    }
    if (f.dtype() != DataType::Float) {
      // Integer (and other non-float) results are exact: the same bytes.
      ASSERT_TRUE(f.bytes().size() == r.bytes().size() &&
                  (r.bytes().empty() || std::memcmp(f.bytes().data(), r.bytes().data(), r.bytes().size()) == 0))
          << what << " output " << o << " differs from the reference";
      continue;
    }
    for (uint64_t i = 0; i < r.element_count(); ++i) {
      const float a = f.data<float>()[i], b = r.data<float>()[i];
      if (std::isnan(b) || std::isinf(b)) {
        ASSERT_TRUE(std::isnan(b) ? std::isnan(a) : a == b)
            << what << " output " << o << " element " << i << ": " << a << " vs " << b;
      } else if (rel == 0) {
        ASSERT_EQ(a, b) << what << " output " << o << " element " << i;
      } else {
        ASSERT_LE(std::fabs(a - b), rel * std::max<double>(std::fabs(b), floor))
            << what << " output " << o << " element " << i << ": " << a << " vs " << b;
      }
    }
  }
}

}  // namespace onyx::testing
