#pragma once
// A small self-describing byte format for cache payloads: labelled, length-prefixed fields.
// decode() is strict: any malformed input is nullopt, never a crash.

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cujit::detail {

using Record = std::map<std::string, std::string>;

std::string encode_record(const Record& record);
std::optional<Record> decode_record(std::string_view bytes);

}  // namespace cujit::detail
