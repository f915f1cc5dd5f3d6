#include "link/compile_sources.hpp"

#include "compile/compile_batch.hpp"
#include "support/concurrently.hpp"

namespace cujit::detail {

void compile_sources(std::vector<LinkableCode>& codes,
                     const std::function<LinkableCode(const LinkableCode&)>& compile) {
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i].format() == Format::cu) sources.push_back(i);
  }
  // One thread (one source, or one hardware thread): nothing can compile beside anything.
  if (concurrency_for(sources.size()) < 2) {
    for (std::size_t index : sources) codes[index] = compile(codes[index]);
    return;
  }
  CompileBatch batch(sources.size());
  run_concurrently(sources.size(), [&](std::size_t j) {
    const CompileBatch::Item item(batch);
    codes[sources[j]] = compile(codes[sources[j]]);
  });
}

}  // namespace cujit::detail
