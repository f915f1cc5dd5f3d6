#pragma once
// A small self-describing byte format for cache payloads: labelled, length-prefixed fields.
// decode() is strict: any malformed input is nullopt, never a crash.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

using Record = std::map<std::string, std::string>;

std::string encode_record(const Record& record);
std::optional<Record> decode_record(std::string_view bytes);

// A list in a Record: "<name>#<index>" fields, zero-padded so that the map keeps their
// order, and "<name>#" holding the count. get_record_list is nullopt when the count or an
// item is missing or malformed.
void put_record_list(Record& record, const std::string& name, const std::vector<std::string>& items);
std::optional<std::vector<std::string>> get_record_list(const Record& record, const std::string& name);

}  // namespace cujit::detail
