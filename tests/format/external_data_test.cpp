#include "format/external_data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "base/pages.hpp"
#include "format/mapped_file.hpp"

namespace onyx {
namespace ONYX_TEST_FILE {

namespace fs = std::filesystem;

// A fresh directory per test: <tmp>/onyx_ext_<pid>_<counter>_<random>, holding "model/" (the
// model directory) and "outside/" (a sibling the model must not reach). Removed afterwards.
class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    for (int attempt = 0;; ++attempt) {
      root_ = fs::temp_directory_path() /
              ("onyx_ext_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
               std::to_string(rd()));
      if (fs::create_directory(root_)) break;
      ASSERT_LT(attempt, 100) << "cannot create a unique temporary directory";
    }
    model_ = root_ / "model";
    outside_ = root_ / "outside";
    fs::create_directory(model_);
    fs::create_directory(outside_);
  }

  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  static void write(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
  }

  static ExternalDataRef ref(std::string location, uint64_t offset = 0,
                             std::optional<uint64_t> length = std::nullopt) {
    ExternalDataRef r;
    r.location = std::move(location);
    r.offset = offset;
    r.length = length;
    return r;
  }

  // Expects resolve() to throw an onyx::Error whose message contains every one of `parts`.
  void expect_refused(const ExternalDataRef& r, std::optional<uint64_t> expected,
                      std::initializer_list<std::string> parts) {
    ExternalDataResolver resolver(model_);
    try {
      resolver.resolve(r, expected, "W");
      ADD_FAILURE() << "location '" << r.location << "' was not refused";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'" + r.location + "'"), std::string::npos) << msg;
      for (const auto& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  }

  fs::path root_, model_, outside_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no onyx::Error thrown";
  return {};
}

// ---- MappedFile ----

TEST_F(ExternalDataTest, MappedFileReadsWholeFile) {
  write(model_ / "a.bin", "hello world");
  auto file = MappedFile::open(model_ / "a.bin");
  EXPECT_EQ(file->size(), 11u);
  EXPECT_EQ(file->view(), "hello world");
  EXPECT_TRUE(file->is_mapped());
  EXPECT_EQ(file->path(), model_ / "a.bin");
  file->prefetch(3, 100);  // a hint only; clamped to the file
}

// Releasing pages of a mapping drops them from memory; reading again gives the file's bytes. Memory that is no
// mapping (bytes held in memory) is left alone.
TEST_F(ExternalDataTest, ReleasedPagesReadBackFromTheFile) {
  std::string content(5 * 4096 + 123, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + 1);
  write(model_ / "pages.bin", content);
  auto file = MappedFile::open(model_ / "pages.bin");
  EXPECT_EQ(file->view(), content);  // every page resident now
  release_mapped_pages(file->data() + 100, file->size() - 200);
  EXPECT_EQ(file->view(), content);
  auto held = MappedFile::from_bytes(content);
  release_mapped_pages(held->data(), held->size());
  EXPECT_EQ(held->view(), content);
  std::string heap = content;
  release_mapped_pages(heap.data(), heap.size());
  EXPECT_EQ(heap, content);
}

TEST_F(ExternalDataTest, MappedFileEmpty) {
  write(model_ / "empty.bin", "");
  auto file = MappedFile::open(model_ / "empty.bin");
  EXPECT_EQ(file->size(), 0u);
  EXPECT_EQ(file->data(), nullptr);
  EXPECT_TRUE(file->view().empty());
  EXPECT_FALSE(file->is_mapped());
}

TEST_F(ExternalDataTest, MappedFileMissingNamesPath) {
  const fs::path missing = model_ / "no_such_file.bin";
  const std::string msg = message_of([&] { MappedFile::open(missing); });
  EXPECT_NE(msg.find(missing.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

TEST_F(ExternalDataTest, MappedFileDirectoryRefused) {
  const std::string msg = message_of([&] { MappedFile::open(model_); });
  EXPECT_NE(msg.find(model_.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
}

TEST_F(ExternalDataTest, MappedFilePermissionDenied) {
  write(model_ / "secret.bin", "x");
  fs::permissions(model_ / "secret.bin", fs::perms::none);
  auto open_message = [&] { return message_of([&] { MappedFile::open(model_ / "secret.bin"); }); };
  auto names_file_and_cause = [](const std::string& msg) {
    return msg.find("secret.bin") != std::string::npos && msg.find("Permission denied") != std::string::npos;
  };
  if (::geteuid() != 0) {
    const std::string msg = open_message();
    EXPECT_TRUE(names_file_and_cause(msg)) << msg;
    return;
  }
  // Root ignores file permissions (CI runs as root): the open runs in a child process that has become the
  // unprivileged user nobody (65534). The threadsafe style starts the child afresh, not as a fork of this one.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
          std::fputs("cannot become the user nobody\n", stderr);
          std::_Exit(2);
        }
        const std::string msg = open_message();
        std::fprintf(stderr, "%s\n", msg.c_str());
        std::_Exit(names_file_and_cause(msg) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "Permission denied");
}

TEST_F(ExternalDataTest, MappedFileFromBytes) {
  auto file = MappedFile::from_bytes(std::string("ab\0cd", 5));
  EXPECT_EQ(file->size(), 5u);
  EXPECT_EQ(file->view(), std::string_view("ab\0cd", 5));
  EXPECT_TRUE(file->path().empty());
  EXPECT_FALSE(file->is_mapped());
  auto empty = MappedFile::from_bytes("");
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(empty->data(), nullptr);
}

// A sparse file larger than 4 GiB: sizes and offsets past 32 bits work and no page is read but
// the ones touched.
TEST_F(ExternalDataTest, LargeSparseFileBeyond4GiB) {
  const fs::path big = model_ / "big.bin";
  const uint64_t size = (uint64_t{5} << 30) + 7;
  const uint64_t marker_at = (uint64_t{9} << 29);  // 4.5 GiB
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0 ||
        ::pwrite(fd, "MARK", 4, static_cast<off_t>(marker_at)) != 4) {
      ::close(fd);
      GTEST_SKIP() << "filesystem cannot hold a sparse 5 GiB file";
    }
    ::close(fd);
  }
  auto file = MappedFile::open(big);
  EXPECT_EQ(file->size(), size);

  ExternalDataResolver resolver(model_);
  auto view = resolver.resolve(ref("big.bin", marker_at, 4), 4, "W");
  EXPECT_EQ(view.bytes, "MARK");
  auto tail = resolver.resolve(ref("big.bin", size - 7), std::nullopt, "W");
  EXPECT_EQ(tail.bytes.size(), 7u);
}

// ---- parse_external_data ----

TEST(ParseExternalData, AllKeys) {
  const auto r = parse_external_data({{"location", "w.bin"},
                                      {"offset", "4096"},
                                      {"length", "12"},
                                      {"checksum", "abc123"},
                                      {"basepath", "ignored"}},
                                     "W");
  EXPECT_EQ(r.location, "w.bin");
  EXPECT_EQ(r.offset, 4096u);
  ASSERT_TRUE(r.length);
  EXPECT_EQ(*r.length, 12u);
  ASSERT_TRUE(r.checksum);
  EXPECT_EQ(*r.checksum, "abc123");
}

TEST(ParseExternalData, Defaults) {
  const auto r = parse_external_data({{"location", "w.bin"}}, "W");
  EXPECT_EQ(r.offset, 0u);
  EXPECT_FALSE(r.length);
  EXPECT_FALSE(r.checksum);
}

TEST(ParseExternalData, LargestValues) {
  const auto r = parse_external_data(
      {{"location", "w.bin"}, {"offset", "18446744073709551615"}, {"length", "0"}}, "W");
  EXPECT_EQ(r.offset, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*r.length, 0u);
}

TEST(ParseExternalData, MissingLocation) {
  const std::string msg =
      message_of([] { parse_external_data({{"offset", "0"}, {"length", "4"}}, "W"); });
  EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("location"), std::string::npos) << msg;
}

TEST(ParseExternalData, EmptyLocation) {
  const std::string msg = message_of([] { parse_external_data({{"location", ""}}, "W"); });
  EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
}

TEST(ParseExternalData, DuplicateKey) {
  const std::string msg = message_of([] {
    parse_external_data({{"location", "w.bin"}, {"offset", "0"}, {"offset", "8"}}, "W");
  });
  EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w.bin'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'offset' appears twice"), std::string::npos) << msg;
  EXPECT_THROW(parse_external_data({{"location", "a"}, {"location", "b"}}, "W"), Error);
  EXPECT_THROW(parse_external_data({{"location", "a"}, {"x", "1"}, {"x", "2"}}, "W"), Error);
}

TEST(ParseExternalData, BadOffsetText) {
  for (const char* text : {"-1", "abc", "99999999999999999999999", "", " 1", "1 ", "+1", "0x10",
                           "1.5", "18446744073709551616"}) {
    const std::string msg =
        message_of([&] { parse_external_data({{"location", "w.bin"}, {"offset", text}}, "W"); });
    EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << text << ": " << msg;
    EXPECT_NE(msg.find("'w.bin'"), std::string::npos) << text << ": " << msg;
    EXPECT_NE(msg.find("offset '" + std::string(text) + "'"), std::string::npos)
        << text << ": " << msg;
  }
  EXPECT_NE(message_of([] {
              parse_external_data({{"location", "w.bin"}, {"offset", "-1"}}, "W");
            }).find("negative"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              parse_external_data({{"location", "w.bin"}, {"offset", "99999999999999999999999"}},
                                  "W");
            }).find("64 bits"),
            std::string::npos);
}

TEST(ParseExternalData, BadLengthText) {
  for (const char* text : {"-4", "four", "99999999999999999999999"}) {
    const std::string msg =
        message_of([&] { parse_external_data({{"location", "w.bin"}, {"length", text}}, "W"); });
    EXPECT_NE(msg.find("length '" + std::string(text) + "'"), std::string::npos) << msg;
  }
}

// ---- ExternalDataResolver: accepted ----

TEST_F(ExternalDataTest, OffsetAndLength) {
  write(model_ / "w.bin", "0123456789");
  ExternalDataResolver resolver(model_);
  auto view = resolver.resolve(ref("w.bin", 2, 5), 5, "W");
  EXPECT_EQ(view.bytes, "23456");
  ASSERT_TRUE(view.file);
  EXPECT_EQ(view.file->size(), 10u);
}

TEST_F(ExternalDataTest, DefaultLengthIsRestOfFile) {
  write(model_ / "w.bin", "0123456789");
  ExternalDataResolver resolver(model_);
  EXPECT_EQ(resolver.resolve(ref("w.bin", 6), std::nullopt, "W").bytes, "6789");
  EXPECT_EQ(resolver.resolve(ref("w.bin"), 10, "W").bytes, "0123456789");
  // An offset exactly at the end gives an empty range.
  EXPECT_EQ(resolver.resolve(ref("w.bin", 10), 0, "W").bytes.size(), 0u);
}

TEST_F(ExternalDataTest, SubdirectoryAndDotComponents) {
  fs::create_directories(model_ / "data" / "sub");
  write(model_ / "data" / "sub" / "w.bin", "abc");
  ExternalDataResolver resolver(model_);
  EXPECT_EQ(resolver.resolve(ref("data/sub/w.bin"), 3, "W").bytes, "abc");
  EXPECT_EQ(resolver.resolve(ref("./data//sub/./w.bin"), 3, "W").bytes, "abc");
  // Backslash separators (models written on Windows) are accepted.
  EXPECT_EQ(resolver.resolve(ref("data\\sub\\w.bin"), 3, "W").bytes, "abc");
}

TEST_F(ExternalDataTest, FileIsMappedOnceAndKeptAlive) {
  write(model_ / "w.bin", "0123456789");
  ExternalDataResolver::View a, b;
  {
    ExternalDataResolver resolver(model_);
    a = resolver.resolve(ref("w.bin", 0, 4), 4, "A");
    b = resolver.resolve(ref("./w.bin", 4, 6), 6, "B");
  }
  EXPECT_EQ(a.file.get(), b.file.get());
  EXPECT_EQ(a.bytes, "0123");  // still valid after the resolver is gone
  EXPECT_EQ(b.bytes, "456789");
}

TEST_F(ExternalDataTest, EmptyModelDirMeansCurrentDirectory) {
  write(model_ / "w.bin", "xyz");
  const fs::path old = fs::current_path();
  fs::current_path(model_);
  try {
    ExternalDataResolver resolver("");
    EXPECT_EQ(resolver.resolve(ref("w.bin"), 3, "W").bytes, "xyz");
  } catch (...) {
    fs::current_path(old);
    throw;
  }
  fs::current_path(old);
}

TEST_F(ExternalDataTest, SymlinkInsidePointingInsideIsAllowed) {
  fs::create_directory(model_ / "real");
  write(model_ / "real" / "w.bin", "abcd");
  fs::create_symlink("real/w.bin", model_ / "link.bin");
  fs::create_directory_symlink("real", model_ / "alias");
  ExternalDataResolver resolver(model_);
  auto via_file_link = resolver.resolve(ref("link.bin"), 4, "W");
  auto via_dir_link = resolver.resolve(ref("alias/w.bin"), 4, "W");
  EXPECT_EQ(via_file_link.bytes, "abcd");
  EXPECT_EQ(via_file_link.file.get(), via_dir_link.file.get());  // same canonical file
}

// ---- ExternalDataResolver: refused ----

TEST_F(ExternalDataTest, AbsolutePathRefused) {
  write(model_ / "w.bin", "abcd");
  expect_refused(ref((model_ / "w.bin").string()), std::nullopt, {"absolute"});
  expect_refused(ref("\\w.bin"), std::nullopt, {"absolute"});
  expect_refused(ref("C:\\w.bin"), std::nullopt, {"absolute"});
}

TEST_F(ExternalDataTest, DotDotParentRefused) {
  write(outside_ / "x", "abcd");
  expect_refused(ref("../x"), std::nullopt, {"has a '..' component"});
}

TEST_F(ExternalDataTest, DotDotAfterSubdirRefused) {
  fs::create_directory(model_ / "a");
  write(model_ / "x", "abcd");
  expect_refused(ref("a/../../x"), std::nullopt, {"has a '..' component"});
  // Even a '..' that would stay inside is refused.
  expect_refused(ref("a/../x"), std::nullopt, {"has a '..' component"});
}

TEST_F(ExternalDataTest, TrailingDotDotRefused) {
  fs::create_directory(model_ / "a");
  expect_refused(ref("a/.."), std::nullopt, {"has a '..' component"});
}

TEST_F(ExternalDataTest, BackslashDotDotRefused) {
  write(outside_ / "x", "abcd");
  expect_refused(ref("..\\outside\\x"), std::nullopt, {"has a '..' component"});
  expect_refused(ref("a\\..\\..\\x"), std::nullopt, {"has a '..' component"});
}

TEST_F(ExternalDataTest, EmptyLocationRefused) {
  expect_refused(ref(""), std::nullopt, {"empty"});
}

TEST_F(ExternalDataTest, ModelDirectoryItselfRefused) {
  expect_refused(ref("."), std::nullopt, {"model directory itself"});
  expect_refused(ref("./"), std::nullopt, {"model directory itself"});
}

TEST_F(ExternalDataTest, SymlinkedParentOutsideRefused) {
  write(outside_ / "x.bin", "abcd");
  fs::create_directory_symlink(outside_, model_ / "data");
  expect_refused(ref("data/x.bin"), std::nullopt, {"outside the model directory"});
}

TEST_F(ExternalDataTest, SymlinkedFileOutsideRefused) {
  write(outside_ / "x.bin", "abcd");
  fs::create_symlink(outside_ / "x.bin", model_ / "x.bin");
  expect_refused(ref("x.bin"), std::nullopt, {"outside the model directory"});
}

TEST_F(ExternalDataTest, RelativeSymlinkEscapingRefused) {
  write(outside_ / "x.bin", "abcd");
  fs::create_directory(model_ / "d");
  fs::create_symlink("../../outside/x.bin", model_ / "d" / "x.bin");
  expect_refused(ref("d/x.bin"), std::nullopt, {"outside the model directory"});
}

TEST_F(ExternalDataTest, HardLinkedFileRefused) {
  write(outside_ / "x.bin", "abcd");
  fs::create_hard_link(outside_ / "x.bin", model_ / "x.bin");
  expect_refused(ref("x.bin"), std::nullopt, {"hard-linked"});
}

TEST_F(ExternalDataTest, OffsetBeyondFileRefused) {
  write(model_ / "w.bin", "0123456789");
  expect_refused(ref("w.bin", 11), std::nullopt, {"offset 11", "beyond the end", "10 bytes"});
}

TEST_F(ExternalDataTest, OffsetPlusLengthBeyondFileRefused) {
  write(model_ / "w.bin", "0123456789");
  expect_refused(ref("w.bin", 4, 7), std::nullopt, {"offset 4 + length 7", "beyond the end"});
}

TEST_F(ExternalDataTest, OffsetPlusLengthOverflowRefused) {
  write(model_ / "w.bin", "0123456789");
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  // offset + length wraps around to 3, which a naive check would accept.
  expect_refused(ref("w.bin", 4, max), std::nullopt, {"beyond the end"});
  expect_refused(ref("w.bin", max, 4), std::nullopt, {"beyond the end"});
}

TEST_F(ExternalDataTest, LengthMismatchRefused) {
  write(model_ / "w.bin", "0123456789");
  expect_refused(ref("w.bin", 0, 8), 16, {"length 8", "16 bytes"});
  expect_refused(ref("w.bin", 2), 16, {"length 8", "16 bytes"});  // default length too
}

TEST_F(ExternalDataTest, NonexistentFileRefused) {
  expect_refused(ref("missing.bin"), std::nullopt, {"cannot be resolved", "No such file"});
}

TEST_F(ExternalDataTest, DirectoryRefused) {
  fs::create_directory(model_ / "dir");
  expect_refused(ref("dir"), std::nullopt, {"is a directory"});
}

TEST_F(ExternalDataTest, FifoRefused) {
  ASSERT_EQ(::mkfifo((model_ / "fifo").c_str(), 0600), 0);
  expect_refused(ref("fifo"), std::nullopt, {"not a regular file"});
}

TEST_F(ExternalDataTest, MissingModelDirectoryRefused) {
  ExternalDataResolver resolver(root_ / "no_such_dir");
  const std::string msg = message_of([&] { resolver.resolve(ref("w.bin"), std::nullopt, "W"); });
  EXPECT_NE(msg.find("tensor 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_dir"), std::string::npos) << msg;
}

TEST_F(ExternalDataTest, ControlCharactersEscapedInMessages) {
  const std::string msg = message_of([&] {
    ExternalDataResolver resolver(model_);
    resolver.resolve(ref("../\x1b[2Jx"), std::nullopt, "W\n");
  });
  EXPECT_NE(msg.find("tensor 'W\\x0a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'../\\x1b[2Jx'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace onyx
