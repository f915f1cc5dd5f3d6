#pragma once
// A private temporary directory (mode 0700, under $TMPDIR or /tmp), removed with its
// contents when the owner goes.

#include <filesystem>
#include <optional>
#include <string>

namespace cujit::detail {

class TempDir {
 public:
  // Throws Error(io) when no directory can be made.
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // The one regular file in the directory, if there is exactly one.
  std::optional<std::filesystem::path> only_file() const;

 private:
  std::filesystem::path path_;
};

}  // namespace cujit::detail
