#include "link/compile_sources.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include "compile/compile_batch.hpp"
#include "cujit/environment.hpp"
#include "support/concurrently.hpp"

namespace cujit::detail {

void compile_sources(std::vector<LinkableCode>& codes, const StoredSource& stored, const CompileSource& compile) {
  std::vector<std::size_t> misses;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i].format() != Format::cu) continue;
    std::optional<LinkableCode> hit;
    if (stored) {
      try {
        hit = stored(codes[i]);
      } catch (const std::exception&) {
        hit.reset();  // the compile below meets the same trouble and reports it
      }
    }
    if (hit) {
      codes[i] = std::move(*hit);
    } else {
      misses.push_back(i);
    }
  }
  // One compile, or one hardware thread: nothing can compile beside anything.
  if (misses.size() < 2 || concurrency_for(misses.size()) < 2) {
    for (std::size_t index : misses) codes[index] = compile(codes[index]);
    return;
  }
  // How long a compile waits for the one running in this process before it takes a worker
  // (compile/compile_batch.hpp): about a worker's start, at most a minute.
  const auto hedge = std::chrono::milliseconds(std::min<std::uint64_t>(
      environment::count("CUJIT_COMPILE_WORKER_HEDGE_MS", 50), 60'000));
  CompileBatch batch(misses.size(), std::chrono::milliseconds(250), hedge);
  run_concurrently(misses.size(), [&](std::size_t j) {
    const CompileBatch::Item item(batch);
    codes[misses[j]] = compile(codes[misses[j]]);
  });
}

void compile_sources(std::vector<LinkableCode>& codes, const CompileSource& compile) {
  compile_sources(codes, StoredSource{}, compile);
}

}  // namespace cujit::detail
