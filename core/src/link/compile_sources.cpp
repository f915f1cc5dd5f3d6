#include "link/compile_sources.hpp"

#include "compile/compile_worker.hpp"
#include "support/concurrently.hpp"

namespace cujit::detail {

void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile) {
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i].format() == Format::cu) sources.push_back(i);
  }
  if (sources.size() == 1) {
    codes[sources[0]] = compile(codes[sources[0]]);
    return;
  }
  run_concurrently(sources.size(), [&](std::size_t j) {
    const SideBySideCompiles in_workers;
    codes[sources[j]] = compile(codes[sources[j]]);
  });
}

}  // namespace cujit::detail
