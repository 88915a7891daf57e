// Small work runs on the calling thread alone, and the caller's team size comes back after.
#include <gtest/gtest.h>

#include <omp.h>

#include "kernels/serial.hpp"

namespace onyx::kernels {
namespace ONYX_TEST_FILE {

TEST(SerialScope, OneThreadInsideAndTheCallersTeamAfter) {
  const int was = omp_get_max_threads();
  omp_set_num_threads(3);
  {
    const SerialScope serial(true);
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), 3);
  {
    const SerialScope shared(false);
    EXPECT_EQ(omp_get_max_threads(), 3);
  }
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(was);
}

TEST(SerialScope, OnlySmallProblemsRunSerially) {
  EXPECT_TRUE(runs_serially(258.0 * 8 * 5));         // a depthwise layer over 8 audio frames
  EXPECT_FALSE(runs_serially(64.0 * 56 * 56 * 64));  // a 1x1 convolution of a 56x56 image
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx::kernels
