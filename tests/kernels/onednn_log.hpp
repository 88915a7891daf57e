// What oneDNN reports having executed (its verbose log) while `run` runs: tests of fast kernels read it as proof
// that a fast kernel, not a silent fallback to the reference, produced the result being compared (or that a
// fallback, where one is expected, ran no oneDNN primitive).
#pragma once
#include <gtest/gtest.h>

#include <string>

#include <oneapi/dnnl/dnnl.hpp>

namespace onyx::testing {

template <class F>
std::string onednn_log(F&& run) {
  dnnl::set_verbose(1);
  ::testing::internal::CaptureStdout();
  run();
  std::string log = ::testing::internal::GetCapturedStdout();
  dnnl::set_verbose(0);
  return log;
}

}  // namespace onyx::testing
