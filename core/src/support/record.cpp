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

namespace {
std::string item_field(const std::string& name, std::size_t index) {
  std::string digits = std::to_string(index);
  if (digits.size() < 8) digits.insert(0, 8 - digits.size(), '0');
  return name + "#" + digits;
}
}  // namespace

void put_record_list(Record& record, const std::string& name, const std::vector<std::string>& items) {
  record[name + "#"] = std::to_string(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) record[item_field(name, i)] = items[i];
}

std::optional<std::vector<std::string>> get_record_list(const Record& record, const std::string& name) {
  const auto count_at = record.find(name + "#");
  if (count_at == record.end() || count_at->second.empty() || count_at->second.size() > 8 ||
      count_at->second.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  const std::size_t count = std::stoul(count_at->second);
  std::vector<std::string> items;
  for (std::size_t i = 0; i < count; ++i) {
    const auto item = record.find(item_field(name, i));
    if (item == record.end()) return std::nullopt;
    items.push_back(item->second);
  }
  return items;
}

}  // namespace cujit::detail
