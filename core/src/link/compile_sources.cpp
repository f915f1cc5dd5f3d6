#include "link/compile_sources.hpp"

#include "support/concurrently.hpp"

namespace cujit::detail {

void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile) {
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i].format() == Format::cu) sources.push_back(i);
  }
  run_concurrently(sources.size(), [&](std::size_t j) { codes[sources[j]] = compile(codes[sources[j]]); });
}

}  // namespace cujit::detail
