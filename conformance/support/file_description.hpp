#pragma once
// A file as library identities describe it (support/library_identity.hpp), computed the
// plain way with stat(2): "path=..;size=..;mtime=..;ctime=..;device=..;inode=..".

#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace cujit::test {

inline std::string stat_description(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "unknown:stat failed for " + path.string();
  const auto ns = [](const timespec& t) {
    return std::to_string(static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec);
  };
  return "path=" + path.string() + ";size=" + std::to_string(info.st_size) + ";mtime=" + ns(info.st_mtim) +
         ";ctime=" + ns(info.st_ctim) + ";device=" + std::to_string(info.st_dev) +
         ";inode=" + std::to_string(info.st_ino);
}

}  // namespace cujit::test
