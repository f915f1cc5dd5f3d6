#include "json_output.hpp"

#include <iostream>

namespace cujit::cli {

std::string json_text(const nlohmann::json& document) {
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void print_json(const nlohmann::json& document) { std::cout << json_text(document); }

}  // namespace cujit::cli
