#pragma once
#include <filesystem>
#include <string>

namespace cujit::detail {

// Whole file as bytes. Throws Error(io) naming the path and `component` when the path is
// missing, a directory, or unreadable.
std::string read_file(const std::filesystem::path& path, const std::string& component);

}  // namespace cujit::detail
