// Resize's float32 fast path (two adjacent resized axes, channels first or last) against its reference kernel on
// random inputs, over modes, coordinate transformations, antialiasing and extrapolation; layouts it does not take
// (three resized axes, axes apart) go to the reference and must give the same result. Float sums of inputs in
// [-2, 2]: within 1e-6 of the reference's double sums, relative, or absolute near zero.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/reference_compare.hpp"
#include "ops/op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::compare_with_reference;
using testing::f32;
using testing::i64;
using testing::OneNode;

Tensor random_floats(std::mt19937& rng, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  std::uniform_real_distribution<float> u(-2, 2);
  for (float& x : v) x = u(rng);
  if (!v.empty()) v[0] = -0.0f;  // a copied -0 keeps its sign
  return f32(dims, v);
}

std::string text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct Case {
  std::vector<int64_t> in, out;
};

TEST(ResizeFastVsReference, ModesTransformsAndLayouts) {
  std::mt19937 rng(11);
  const std::vector<Case> cases = {
      {{1, 3, 5, 7}, {1, 3, 10, 14}},  // 2x upsampling, channels first
      {{2, 2, 9, 8}, {2, 2, 4, 3}},    // downsampling
      {{1, 6, 7, 4}, {1, 11, 13, 4}},  // channels last: H and W are axes 1 and 2
      {{3, 17}, {3, 40}},              // one axis
      {{2, 5, 6}, {2, 5, 6}},          // nothing resized
      {{1, 4, 1, 1}, {1, 4, 3, 5}},    // from one pixel
  };
  const std::vector<std::string> modes = {"nearest", "linear", "cubic"};
  const std::vector<std::string> transforms = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                               "tf_half_pixel_for_nn", "half_pixel_symmetric"};
  int runs = 0;
  for (const Case& c : cases)
    for (const std::string& mode : modes)
      for (const std::string& ctm : transforms)
        for (int antialias = 0; antialias < 2; ++antialias) {
          if (antialias && mode == "nearest") continue;
          OneNode node("Resize", 19);
          node.input("x", random_floats(rng, c.in))
              .omitted_input()
              .omitted_input()
              .input("sizes", i64({static_cast<int64_t>(c.out.size())}, c.out))
              .attr_string("mode", mode)
              .attr_string("coordinate_transformation_mode", ctm)
              .attr_int("antialias", antialias)
              .attr_int("exclude_outside", mode == "cubic" && antialias == 0);
          compare_with_reference(node, "Resize " + mode + " " + ctm + " antialias " + std::to_string(antialias) + " " +
                                           text(c.in) + " -> " + text(c.out),
                                 1e-6, 1);
          ++runs;
        }
  EXPECT_EQ(runs, static_cast<int>(cases.size()) * 6 * 5);
}

TEST(ResizeFastVsReference, CropAndResizeExtrapolatesAndOtherLayoutsFallBack) {
  std::mt19937 rng(12);
  OneNode crop("Resize", 19);
  crop.input("x", random_floats(rng, {1, 2, 6, 6}))
      .input("roi", f32({8}, {0, 0, -0.25f, 0.1f, 1, 1, 1.2f, 0.9f}))
      .omitted_input()
      .input("sizes", i64({4}, {1, 2, 5, 7}))
      .attr_string("mode", "linear")
      .attr_string("coordinate_transformation_mode", "tf_crop_and_resize")
      .attr_float("extrapolation_value", 7.5f);
  compare_with_reference(crop, "tf_crop_and_resize", 1e-6, 1);
  for (const Case& c : std::vector<Case>{{{2, 3, 4, 5}, {3, 6, 8, 5}}, {{2, 3, 4, 5}, {4, 3, 4, 9}}}) {
    OneNode node("Resize", 19);
    node.input("x", random_floats(rng, c.in))
        .omitted_input()
        .omitted_input()
        .input("sizes", i64({4}, c.out))
        .attr_string("mode", "linear");
    compare_with_reference(node, "Resize " + text(c.in) + " -> " + text(c.out), 1e-6, 1);
  }
}

}  // namespace ONYX_TEST_FILE
}  // namespace onyx
