#include <gtest/gtest.h>

#include "base/error.hpp"
#include "graph_builder.hpp"
#include "op_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

using testing::error_of;

using testing::make_tensor;
using testing::ModelBuilder;
using testing::values_of;
using D = DataType;

// Body: running sum; state s (float [2]) plus one slice a (float [2]) per step; outputs the new sum twice (as the
// state and as a scan output). `extra_scan` adds a second, unused scan input.
pb::Graph sum_body(ModelBuilder& mb, bool extra_scan = false) {
  pb::Graph body;
  mb.input(body, "s_in", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(body, "a", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  if (extra_scan) mb.input(body, "b", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.node(body, "Add", {"s_in", "a"}, {"s_out"});
  mb.node(body, "Add", {"s_in", "a"}, {"y"});
  mb.output(body, "s_out", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.output(body, "y", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  return body;
}

TEST(Scan, SumsRowsSpecExample_Opset9) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "init", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{3, 2}));
  pb::Node& n = mb.node(g, "Scan", {"init", "x"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 1);
  mb.attr_graph(n, "body", sum_body(mb));
  mb.output(g, "sum");
  mb.output(g, "ys");
  Session s = mb.session(std::move(g), 9);
  EXPECT_EQ(s.outputs().at(1).type.to_string_with_shape(), "float[3,2]");
  auto out = s.run({{"init", Datum::of(make_tensor<float>(D::Float, {2}, {0, 0}))},
                    {"x", Datum::of(make_tensor<float>(D::Float, {3, 2}, {1, 2, 3, 4, 5, 6}))}});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{9, 12}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values_of<float>(out.at(1).second.tensor), (std::vector<float>{1, 2, 4, 6, 9, 12}));
}

pb::Graph axes_model(ModelBuilder& mb) {
  pb::Graph g;
  mb.input(g, "init", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{2, 3}));
  pb::Node& n = mb.node(g, "Scan", {"init", "x"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 1);
  mb.attr_ints(n, "scan_input_axes", {-1});
  mb.attr_ints(n, "scan_input_directions", {1});
  mb.attr_ints(n, "scan_output_axes", {-1});
  mb.attr_ints(n, "scan_output_directions", {1});
  mb.attr_graph(n, "body", sum_body(mb));
  mb.output(g, "sum");
  mb.output(g, "ys");
  return g;
}

TEST(Scan, AxesAndDirectionsWithNegativeAxes_Opset11) {
  // Columns of x, last first: [3,6], [2,5], [1,4]; running sums [3,6], [5,11], [6,15], written as columns from
  // the last position backwards.
  ModelBuilder mb;
  Session s = mb.session(axes_model(mb), 11);
  EXPECT_EQ(s.outputs().at(1).type.to_string_with_shape(), "float[2,3]");
  auto out = s.run({{"init", Datum::of(make_tensor<float>(D::Float, {2}, {0, 0}))},
                    {"x", Datum::of(make_tensor<float>(D::Float, {2, 3}, {1, 2, 3, 4, 5, 6}))}});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{6, 15}));
  EXPECT_EQ(out.at(1).second.tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(out.at(1).second.tensor), (std::vector<float>{6, 5, 3, 15, 11, 6}));
}

TEST(Scan, NegativeAxesNeedOpset11_Opset9) {
  ModelBuilder mb;
  std::string e = error_of([&] { mb.session(axes_model(mb), 9); });
  EXPECT_NE(e.find("(Scan)"), std::string::npos) << e;
  EXPECT_NE(e.find("negative axes need opset 11"), std::string::npos) << e;
}

TEST(Scan, BatchWithSequenceLengthsPadsWithZeros_Opset8) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "lens", mb.tensor_t(D::Int64, std::vector<int64_t>{2}));
  mb.input(g, "init", mb.tensor_t(D::Float, std::vector<int64_t>{2, 2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{2, 3, 2}));
  pb::Node& n = mb.node(g, "Scan", {"lens", "init", "x"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 1);
  mb.attr_graph(n, "body", sum_body(mb));
  mb.output(g, "sum");
  mb.output(g, "ys");
  Session s = mb.session(std::move(g), 8);
  EXPECT_EQ(s.outputs().at(1).type.to_string_with_shape(), "float[2,3,2]");
  auto out = s.run({{"lens", Datum::of(make_tensor<int64_t>(D::Int64, {2}, {3, 1}))},
                    {"init", Datum::of(make_tensor<float>(D::Float, {2, 2}, {0, 0, 10, 10}))},
                    {"x", Datum::of(make_tensor<float>(D::Float, {2, 3, 2}, {1, 2, 3, 4, 5, 6, 1, 1, 2, 2, 3, 3}))}});
  EXPECT_EQ(values_of<float>(out.at(0).second.tensor), (std::vector<float>{9, 12, 11, 11}));
  EXPECT_EQ(values_of<float>(out.at(1).second.tensor), (std::vector<float>{1, 2, 4, 6, 9, 12, 11, 11, 0, 0, 0, 0}));
}

TEST(Scan, ReverseDirectionWithoutSequenceLengths_Opset8) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "init", mb.tensor_t(D::Float, std::vector<int64_t>{1, 2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{1, 3, 2}));
  pb::Node& n = mb.node(g, "Scan", {"", "init", "x"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 1);
  mb.attr_ints(n, "directions", {1});
  mb.attr_graph(n, "body", sum_body(mb));
  mb.output(g, "sum");
  mb.output(g, "ys");
  auto out = mb.run(std::move(g), 8,
                    {{"init", Datum::of(make_tensor<float>(D::Float, {1, 2}, {0, 0}))},
                     {"x", Datum::of(make_tensor<float>(D::Float, {1, 3, 2}, {1, 2, 3, 4, 5, 6}))}});
  EXPECT_EQ(values_of<float>(out.at(0).tensor), (std::vector<float>{9, 12}));
  EXPECT_EQ(values_of<float>(out.at(1).tensor), (std::vector<float>{5, 6, 8, 10, 9, 12}));
}

TEST(Scan, ScanInputsOfDifferentLengthsAreAnError_Opset16) {
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "init", mb.tensor_t(D::Float, std::vector<int64_t>{2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{3, 2}));
  mb.input(g, "z", mb.tensor_t(D::Float, std::vector<int64_t>{2, 2}));
  pb::Node& n = mb.node(g, "Scan", {"init", "x", "z"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 2);
  mb.attr_graph(n, "body", sum_body(mb, true));
  mb.output(g, "sum");
  mb.output(g, "ys");
  std::string e = error_of([&] {
    mb.run(std::move(g), 16,
           {{"init", Datum::of(make_tensor<float>(D::Float, {2}, {0, 0}))},
            {"x", Datum::of(make_tensor<float>(D::Float, {3, 2}, {1, 2, 3, 4, 5, 6}))},
            {"z", Datum::of(make_tensor<float>(D::Float, {2, 2}, {1, 2, 3, 4}))}});
  });
  EXPECT_NE(e.find("scan input 1 has length 2 on axis 0, scan input 0 has 3"), std::string::npos) << e;
}

TEST(Scan, Float8NeedsOpset19) {
  // The body is never reached: the element type check refuses the input first.
  ModelBuilder mb;
  pb::Graph g;
  mb.input(g, "init", mb.tensor_t(D::Float8E4M3FN, std::vector<int64_t>{2}));
  mb.input(g, "x", mb.tensor_t(D::Float, std::vector<int64_t>{3, 2}));
  pb::Node& n = mb.node(g, "Scan", {"init", "x"}, {"sum", "ys"});
  mb.attr_int(n, "num_scan_inputs", 1);
  mb.attr_graph(n, "body", sum_body(mb));
  mb.output(g, "sum");
  mb.output(g, "ys");
  std::string e = error_of([&] { mb.session(std::move(g), 16); });
  EXPECT_NE(e.find("Scan(16) input 0 'init' has element type float8e4m3fn"), std::string::npos) << e;
}

}  // namespace
}  // namespace onyx
