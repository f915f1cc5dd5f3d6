#pragma once
// --json output: one JSON document on standard output, indented, invalid UTF-8 replaced
// (a path or a child's output may hold any bytes), followed by a newline.

#include <nlohmann/json.hpp>
#include <string>

namespace cujit::cli {

// The document's text as print_json writes it.
std::string json_text(const nlohmann::json& document);

// Writes json_text(document) to standard output (checked by main's finish_stdout).
void print_json(const nlohmann::json& document);

}  // namespace cujit::cli
