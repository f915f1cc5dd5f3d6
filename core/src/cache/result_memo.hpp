#pragma once
// The memo in front of the build cache's tiers: decoded results (a LinkedKernel, a loaded
// ReduceBuild) kept as shared objects under a pre-key. A pre-key is a string its caller
// builds cheaply from what it already holds (digests taken when the inputs were given,
// options, the settings read at call time) and that names every input of the result. A
// recall is one hash lookup under a lock and a shared_ptr copy: no key hashing, no file
// access, no decoding, no copy of the result's bytes. Bounded in bytes (the sizes its
// callers give), least recently used first.

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>

namespace cujit::detail {

class ResultMemo {
 public:
  explicit ResultMemo(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The object memorized under `pre_key` as `type`, or null.
  std::shared_ptr<const void> recall(const std::string& pre_key, std::type_index type);
  // Keeps `value` (of `type`, about `bytes` large) under `pre_key`, replacing what was
  // there; a value larger than the whole memo is not kept.
  void memorize(const std::string& pre_key, std::type_index type, std::shared_ptr<const void> value,
                std::uint64_t bytes);
  void clear();

  struct Counts {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
    std::uint64_t evictions = 0;
  };
  Counts counts() const;

 private:
  struct Entry {
    std::type_index type;
    std::shared_ptr<const void> value;
    std::uint64_t bytes;
    std::list<const std::string*>::iterator lru;
  };
  void erase(std::unordered_map<std::string, Entry>::iterator entry);

  const std::uint64_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<const std::string*> lru_;  // keys of entries_, most recently used first
  Counts counts_;
};

}  // namespace cujit::detail
