#include "cache/result_memo.hpp"

namespace cujit::detail {

std::shared_ptr<const void> ResultMemo::recall(const std::string& pre_key, std::type_index type) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = entries_.find(pre_key);
  if (found == entries_.end() || found->second.type != type) {
    ++counts_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, found->second.lru);
  ++counts_.hits;
  return found->second.value;
}

void ResultMemo::erase(std::unordered_map<std::string, Entry>::iterator entry) {
  counts_.bytes -= entry->second.bytes;
  --counts_.entries;
  lru_.erase(entry->second.lru);
  entries_.erase(entry);
}

void ResultMemo::memorize(const std::string& pre_key, std::type_index type, std::shared_ptr<const void> value,
                          std::uint64_t bytes) {
  if (bytes > max_bytes_ || value == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto found = entries_.find(pre_key); found != entries_.end()) erase(found);
  const auto [entry, inserted] = entries_.emplace(pre_key, Entry{type, std::move(value), bytes, {}});
  lru_.push_front(&entry->first);  // node-based map: the key's address is stable
  entry->second.lru = lru_.begin();
  counts_.bytes += bytes;
  ++counts_.entries;
  while (counts_.bytes > max_bytes_) {
    erase(entries_.find(*lru_.back()));
    ++counts_.evictions;
  }
}

void ResultMemo::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  lru_.clear();
  counts_.entries = 0;
  counts_.bytes = 0;
}

ResultMemo::Counts ResultMemo::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

}  // namespace cujit::detail
