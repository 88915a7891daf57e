// `onyx optimize`, run as a user would (the binary comes from ONYX_CLI, set by ctest).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

namespace fs = std::filesystem;

std::pair<int, std::string> run_cli(const std::string& args) {
  const char* cli = std::getenv("ONYX_CLI");
  if (!cli) throw Error("ONYX_CLI is not set: run these tests through ctest (or set it to the onyx binary)");
  FILE* p = popen((std::string(cli) + " " + args + " 2>&1").c_str(), "r");
  if (!p) throw Error("popen failed");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(OptimizeCli, WritesAnOptimizedModel) {
  const fs::path dir = fs::temp_directory_path() / cat("onyx_optimize_cli_", ::getpid());
  fs::create_directories(dir);
  testing::GraphSpec g(17);
  g.input("x", DataType::Float, {1, 2, 4, 4}).random("w", {2, 2, 1, 1});
  g.node("Conv", {"x", "w"}, {"c"}).node("Relu", {"c"}, {"r"}).node("Identity", {"r"}, {"y"}).output("y");
  {
    std::ofstream f(dir / "in.onnx", std::ios::binary);
    const std::string bytes = g.bytes();
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto [status, out] = run_cli(cat("optimize ", dir / "in.onnx", " ", dir / "out.onnx", " --level all"));
  EXPECT_EQ(status, 0) << out;
  // Conv + Relu fuse, the Identity goes, and the convolution runs channels-last between two Transposes.
  EXPECT_NE(out.find("nodes: 3 -> 3"), std::string::npos) << out;
  EXPECT_NE(out.find("conv-activation-fusion"), std::string::npos) << out;
  EXPECT_NE(out.find("channels-last"), std::string::npos) << out;
  auto [xstatus, xout] = run_cli(cat("optimize ", dir / "in.onnx", " ", dir / "ext.onnx", " --level extended"));
  EXPECT_EQ(xstatus, 0) << xout;
  EXPECT_NE(xout.find("nodes: 3 -> 1"), std::string::npos) << xout;
  auto [cstatus, cout] = run_cli(cat("check ", dir / "out.onnx"));
  EXPECT_EQ(cstatus, 0) << cout;

  auto [bad, msg] = run_cli(cat("optimize ", dir / "in.onnx", " ", dir / "x.onnx", " --level max"));
  EXPECT_EQ(bad, 1);
  EXPECT_NE(msg.find("'max' is not one of basic, extended, all"), std::string::npos) << msg;
  auto [help, usage] = run_cli("optimize --help");
  EXPECT_EQ(help, 0);
  EXPECT_NE(usage.find("usage: onyx optimize IN OUT"), std::string::npos) << usage;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace onyx
