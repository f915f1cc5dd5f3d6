#include "support/record.hpp"

#include <charconv>

namespace cujit::detail {
namespace {

void put(std::string& out, std::string_view part) {
  out += std::to_string(part.size());
  out += ':';
  out += part;
}

std::optional<std::string_view> take(std::string_view& in) {
  const auto colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 20) return std::nullopt;
  std::size_t size = 0;
  const auto parsed = std::from_chars(in.data(), in.data() + colon, size);
  if (parsed.ec != std::errc{} || parsed.ptr != in.data() + colon) return std::nullopt;
  if (size > in.size() - colon - 1) return std::nullopt;
  const std::string_view part = in.substr(colon + 1, size);
  in.remove_prefix(colon + 1 + size);
  return part;
}

}  // namespace

std::string encode_record(const Record& record) {
  std::string out;
  for (const auto& [label, value] : record) {
    put(out, label);
    put(out, value);
  }
  return out;
}

std::optional<Record> decode_record(std::string_view bytes) {
  Record record;
  while (!bytes.empty()) {
    const auto label = take(bytes);
    if (!label) return std::nullopt;
    const auto value = take(bytes);
    if (!value) return std::nullopt;
    record.emplace(std::string(*label), std::string(*value));
  }
  return record;
}

}  // namespace cujit::detail
