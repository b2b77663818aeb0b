// Test-only: THE temporary folder of every test (one helper; production code has its own temp logic in
// convert/converter.cpp and rdrr/archive.cpp). Header-only (standard library, POSIX mkdtemp, gtest for the
// default name), so the tests of any module allowed to use rdrr/ include it; quant/ may not (its tests
// write no files).
//
//   rdrr::test::TempDir tmp;                 // <system temp>/rdrr_<suite>_<test>_XXXXXX, created empty
//   rdrr::test::TempDir tmp("digests");      // <system temp>/rdrr_digests_XXXXXX
//   write(tmp / "config.json", ...);          // tmp.path() / "config.json"
//
// The folder is made by mkdtemp (unique, mode 0700) and removed recursively by the destructor, after
// giving the owner write access back on every folder below it (tests that make a folder read-only need
// not undo it). Only the creating process removes it: a forked child (a death test, or a process that
// calls exit()) running static destructors never deletes its parent's folder. Non-copyable, non-movable;
// a process-wide scratch folder is a function-local `static const TempDir`.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rdrr::test {

class TempDir {
 public:
  // `tag` names the folder (any character outside [A-Za-z0-9_-] becomes '_'); empty: the running test's
  // "<suite>_<name>", or "test" outside a test.
  explicit TempDir(std::string_view tag = {}) : owner_(::getpid()) {
    const std::string name = tag.empty() ? current_test_tag() : std::string(tag);
    std::string pattern = (std::filesystem::temp_directory_path() / ("rdrr_" + sanitize(name) + "_XXXXXX")).string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = std::filesystem::path(buf.data());
  }
  ~TempDir() {
    if (::getpid() != owner_) return;
    namespace fs = std::filesystem;
    std::error_code ec, ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
      }
    }
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& p) const { return path_ / p; }

 private:
  static std::string sanitize(std::string s) {
    for (char& c : s) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      if (!ok) c = '_';
    }
    return s.size() > 96 ? s.substr(0, 96) : s;
  }
  static std::string current_test_tag() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    if (info == nullptr) return "test";
    return std::string(info->test_suite_name()) + "_" + info->name();
  }

  std::filesystem::path path_;
  pid_t owner_;
};

}  // namespace rdrr::test
