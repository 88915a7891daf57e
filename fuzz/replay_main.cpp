// A driver for the fuzz targets without libFuzzer, for compilers that lack it (the sanitized gcc build that CI
// runs): it passes every file of the given folders (or the given files) to LLVMFuzzerTestOneInput, and with
// -mutations=N also N mutants of each, made the way the libFuzzer build makes them (the target's custom mutator
// where it has one, a plain byte mutator otherwise) from the seeds 1..N (mutant 0 is the file itself), so the same run is the same everywhere.
//
//   fuzz_X_replay [-mutations=N] DIR_OR_FILE...
//
// Exits 0 when every input ran; a finding shows as a sanitizer report or a trap, as under libFuzzer. Inputs that take
// over a second are named on stderr, so that a corpus that grows slow in CI shows why.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                                                unsigned int seed);

namespace {

std::mt19937 byte_rng;

// libFuzzer's LLVMFuzzerMutate, simplified: one random byte changed, inserted or erased, or a run of bytes
// copied within the input.
size_t mutate_bytes(uint8_t* data, size_t size, size_t max_size) {
  std::uniform_int_distribution<int> byte(0, 255);
  switch (byte_rng() % 4) {
    case 0:
      if (size) data[byte_rng() % size] = static_cast<uint8_t>(byte(byte_rng));
      return size;
    case 1:
      if (size < max_size) {
        size_t at = byte_rng() % (size + 1);
        std::memmove(data + at + 1, data + at, size - at);
        data[at] = static_cast<uint8_t>(byte(byte_rng));
        return size + 1;
      }
      return size;
    case 2:
      if (size) {
        size_t at = byte_rng() % size;
        std::memmove(data + at, data + at + 1, size - at - 1);
        return size - 1;
      }
      return size;
    default:
      if (size > 1) {
        size_t from = byte_rng() % size, to = byte_rng() % size;
        size_t n = std::min<size_t>(1 + byte_rng() % 8, size - std::max(from, to));
        std::memmove(data + to, data + from, n);
      }
      return size;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void run(const std::string& bytes, const std::filesystem::path& file, long seed) {
  // A buffer of exactly the input's size, as libFuzzer passes it, so that ASan sees reads past its end.
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  const auto start = std::chrono::steady_clock::now();
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (seconds > 1.0) std::fprintf(stderr, "slow input: %s, mutant %ld: %.1f s\n", file.c_str(), seed, seconds);
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  return mutate_bytes(data, size, max_size);
}

int main(int argc, char** argv) {
  long mutations = 0;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-mutations=", 0) == 0) {
      mutations = std::strtol(arg.c_str() + 11, nullptr, 10);
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: %s is neither a file nor a folder\n", argv[0], arg.c_str());
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-mutations=N] DIR_OR_FILE...  (no inputs given)\n", argv[0]);
    return 2;
  }
  std::sort(files.begin(), files.end());
  const size_t max_size = 1 << 20;
  size_t runs = 0;
  for (const auto& f : files) {
    std::string bytes = read_file(f);
    run(bytes, f, 0);
    ++runs;
    for (long seed = 1; seed <= mutations; ++seed) {
      byte_rng.seed(static_cast<unsigned>(seed));
      std::string buf = bytes;
      buf.resize(std::max(max_size, bytes.size()));
      size_t n = LLVMFuzzerCustomMutator
                     ? LLVMFuzzerCustomMutator(reinterpret_cast<uint8_t*>(buf.data()), bytes.size(), buf.size(),
                                               static_cast<unsigned>(seed))
                     : mutate_bytes(reinterpret_cast<uint8_t*>(buf.data()), bytes.size(), buf.size());
      buf.resize(n);
      run(buf, f, seed);
      ++runs;
    }
  }
  std::printf("%s: %zu inputs from %zu files ran\n", argv[0], runs, files.size());
  return 0;
}
