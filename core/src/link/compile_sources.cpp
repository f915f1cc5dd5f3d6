#include "link/compile_sources.hpp"

#include <algorithm>
#include <chrono>

#include "compile/compile_batch.hpp"
#include "cujit/environment.hpp"
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
  // How long a compile waits for the one running in this process before it takes a worker
  // (compile/compile_batch.hpp): about a worker's start, at most a minute.
  const auto hedge = std::chrono::milliseconds(std::min<std::uint64_t>(
      environment::count("CUJIT_COMPILE_WORKER_HEDGE_MS", 50), 60'000));
  CompileBatch batch(sources.size(), std::chrono::milliseconds(250), hedge);
  run_concurrently(sources.size(), [&](std::size_t j) {
    const CompileBatch::Item item(batch);
    codes[sources[j]] = compile(codes[sources[j]]);
  });
}

}  // namespace cujit::detail
