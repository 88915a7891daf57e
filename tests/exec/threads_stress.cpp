// Many threads, one session: eight threads run one session at once, over and over, with inputs (and input shapes)
// that differ from run to run, and every output must equal, bit for bit, what the same session gives for the same
// feeds run one at a time. It covers what runs share: the session's compiled plan, its memory plans (one per
// input-shape signature, recorded by whichever run comes first), packed weights, kernel caches, oneDNN's
// primitives and scratchpads, and the intra-op thread pool.
//
// A program of its own (ctest entry threads_stress), not part of onyx_tests: it runs for about half a minute. It runs a
// convolutional network and a recurrent one (LSTM then GRU, sequence length and batch free; concurrency_models.hpp),
// and the light models of the folder ONYX_LIGHT_MODELS names (ctest sets it to ../shared/onnx-tests/light when that
// is there, and leaves ThreadsStress.LightModels out otherwise). Environment: ONYX_STRESS_THREADS (8),
// ONYX_STRESS_RUNS (runs per thread for the small models, 200), ONYX_STRESS_SESSION_THREADS (each session's
// intra-op threads; 0, all cores, by default; scripts/tsan_stress.sh sets 1).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "exec/concurrency_models.hpp"
#include "opt/opt_test_util.hpp"

namespace onyx {
namespace {

using namespace testing;
namespace fs = std::filesystem;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

using Outputs = std::vector<std::pair<std::string, Datum>>;

bool same(const Datum& a, const Datum& b) {
  if (a.kind != b.kind || a.elements.size() != b.elements.size()) return false;
  if (a.kind == Datum::Kind::Tensor)
    return a.tensor.dtype() == b.tensor.dtype() && a.tensor.dims() == b.tensor.dims() &&
           a.tensor.bytes() == b.tensor.bytes();
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (!same(a.elements[i], b.elements[i])) return false;
  return true;
}

bool same(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same(a[i].second, b[i].second)) return false;
  return true;
}

// Float feeds of the given dims for each input in order, uniform in [-1, 1).
std::map<std::string, Datum> float_feeds(const Session& s, const std::vector<std::vector<int64_t>>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, Datum> feeds;
  for (size_t i = 0; i < s.inputs().size(); ++i) {
    Tensor t = Tensor::allocate(DataType::Float, dims.at(i));
    float* p = t.mutable_data<float>();
    for (uint64_t k = 0; k < t.element_count(); ++k) p[k] = std::uniform_real_distribution<float>(-1, 1)(rng);
    feeds[s.inputs()[i].name] = Datum::of(std::move(t));
  }
  return feeds;
}

// The dims of each input as declared (the light models' inputs are all static).
std::vector<std::vector<int64_t>> declared_dims(const Session& s) {
  std::vector<std::vector<int64_t>> all;
  for (const IoInfo& in : s.inputs()) {
    std::vector<int64_t> dims;
    for (const Dim& d : in.type.shape.dims) dims.push_back(d.value.value_or(1));
    all.push_back(dims);
  }
  return all;
}

// Runs every feed once, alone, for the expected outputs; then `threads` threads each run `runs` times, thread t's
// run i taking feed (i * 7 + t) mod count, and counts the runs whose outputs differ from the expected ones.
void stress(const Session& s, const std::vector<std::map<std::string, Datum>>& feeds, int threads, int runs,
            const std::string& what) {
  std::vector<Outputs> want;
  for (const auto& f : feeds) want.push_back(s.run(f));
  std::atomic<int> mismatches{0}, failures{0};
  std::mutex first_error_mutex;
  std::string first_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < runs; ++i) {
        const size_t k = static_cast<size_t>(i * 7 + t) % feeds.size();
        try {
          if (!same(s.run(feeds[k]), want[k])) ++mismatches;
        } catch (const std::exception& e) {
          if (failures++ == 0) {
            std::lock_guard<std::mutex> lock(first_error_mutex);
            first_error = e.what();
          }
        }
      }
    });
  for (auto& t : pool) t.join();
  EXPECT_EQ(failures.load(), 0) << what << ": runs failed, the first with: " << first_error;
  EXPECT_EQ(mismatches.load(), 0) << what << ": of " << threads * runs
                                  << " concurrent runs, these gave other outputs than the same feeds run alone";
}

const int kThreads = env_int("ONYX_STRESS_THREADS", 8);
const int kRuns = env_int("ONYX_STRESS_RUNS", 200);
const int kSessionThreads = env_int("ONYX_STRESS_SESSION_THREADS", 0);

// One session per optimization level (1: the model's own ops; 3: fused and channels-last), stressed with the feeds.
void stress_at_levels(const std::string& bytes, const std::vector<std::vector<int64_t>>& shapes, const std::string& what) {
  for (int level : {1, 3}) {
    SessionOptions o;
    o.optimization_level = level;
    o.threads = kSessionThreads;
    Session s = Session::from_bytes(bytes, o);
    std::vector<std::map<std::string, Datum>> feeds;
    for (size_t i = 0; i < shapes.size(); ++i) feeds.push_back(float_feeds(s, {shapes[i]}, static_cast<uint32_t>(i)));
    stress(s, feeds, kThreads, kRuns, what + ", level " + std::to_string(level));
  }
}

TEST(ThreadsStress, RecurrentModelWithMixedShapes) {
  stress_at_levels(recurrent_model(), {{1, 1, 8}, {3, 2, 8}, {7, 1, 8}, {5, 4, 8}, {12, 3, 8}, {2, 6, 8}},
                   "recurrent model");
}

TEST(ThreadsStress, ConvolutionalModelWithMixedBatches) {
  stress_at_levels(convolutional_model(), {{1, 16, 28, 28}, {2, 16, 28, 28}, {3, 16, 28, 28}, {1, 16, 28, 28}},
                   "convolutional model");
}

// The light models (real CNN architectures), each with four inputs: the small ones (a run under ~5 ms) for the
// full count of runs, the large ones for a fiftieth of it (4 per thread by default).
TEST(ThreadsStress, LightModels) {
  const char* env = std::getenv("ONYX_LIGHT_MODELS");
  ASSERT_TRUE(env && *env) << "set ONYX_LIGHT_MODELS to the folder of the light models";
  const fs::path dir = env;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is not a folder";
  const std::map<std::string, int> small{{"light_squeezenet.onnx", 1}, {"light_shufflenet.onnx", 1}};
  int models = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnx") continue;
    ++models;
    SessionOptions o;
    o.threads = kSessionThreads;
    Session s = Session::from_file(e.path(), o);
    std::vector<std::map<std::string, Datum>> feeds;
    for (uint32_t seed = 0; seed < 4; ++seed) feeds.push_back(float_feeds(s, declared_dims(s), seed));
    const int runs = small.count(e.path().filename().string()) ? kRuns : std::max(1, kRuns / 50);
    stress(s, feeds, kThreads, runs, e.path().filename().string());
  }
  EXPECT_GT(models, 0) << "no .onnx files in " << dir;
}

}  // namespace
}  // namespace onyx
