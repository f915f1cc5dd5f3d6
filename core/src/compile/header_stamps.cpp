#include "compile/header_stamps.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "cache/stamp_store.hpp"
#include "cujit/cache_key.hpp"

namespace cujit::detail {
namespace {

// Bump when the include scan or the resolution changes what it gives for the same files:
// a record made by another cujit must not answer for this one. A record holds a recipe's key
// fields, so a new key layout (CacheKey::schema_version) makes every older record another's
// too: the magic names both (schema 4 keyed the program and in-memory headers by digest
// where schema 3 held their text, and a schema-3 record made every compile it answered
// throw once, resolved again, "differ from their header stamps").
const std::string& record_magic() {
  static const std::string magic = "cujit-header-stamps 2 key-schema " + std::to_string(CacheKey::schema_version);
  return magic;
}

// Opt-in: a stat stamp does not name a file's content on NFS (attributes cached up to
// 60 s), on file systems with coarse or restorable times (vfat, squashfs images) or after
// writes through a shared mapping (no ctime change until writeback; never on tmpfs); see
// docs/cache.md, "Header stamps". Reading every header is the default until a record is
// made only where a stamp does name the content.
constexpr StampStoreKind stamps_store{"CUJIT_HEADER_STAMPS", "header-stamps", 4096, std::size_t{32} << 20, true};
// This process's records, bounded by their size (a CUB compile's is ~400 KB): past the
// bound the map starts again (each record is still in the store).
constexpr std::size_t max_memory_bytes = std::size_t{64} << 20;

std::atomic<std::size_t> recalled{0};
std::atomic<std::size_t> stored{0};

std::int64_t nanoseconds(const timespec& t) { return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

std::mutex memory_mutex;
std::map<std::string, std::shared_ptr<const ResolutionRecord>, std::less<>> in_memory;
std::size_t memory_bytes = 0;

std::size_t size_of(const ResolutionRecord& record) {
  std::size_t bytes = sizeof record + record.uncacheable.size();
  for (const HeaderProbe& probe : record.probes) bytes += sizeof probe + probe.path.size();
  for (const std::string& option : record.nvrtc_options) bytes += sizeof option + option.size();
  for (const std::string& field : record.key_fields) bytes += sizeof field + field.size();
  return bytes;
}

// Called with memory_mutex held.
void keep_in_memory(const std::string& inputs_key, std::shared_ptr<const ResolutionRecord> record) {
  const std::size_t bytes = size_of(*record);
  if (bytes > max_memory_bytes) return;
  if (memory_bytes + bytes > max_memory_bytes) {
    in_memory.clear();
    memory_bytes = 0;
  }
  if (auto [it, inserted] = in_memory.try_emplace(inputs_key, record); !inserted) {
    memory_bytes -= size_of(*it->second);
    it->second = std::move(record);
  }
  memory_bytes += bytes;
}

void put_string(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

void put_number(std::string& out, std::uint64_t n) {
  out += std::to_string(n);
  out += ';';
}

// A reader of the encoding that fails (and stays failed) on anything out of shape.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && at_ == text_.size(); }

  std::uint64_t number(char end = ';') {
    std::uint64_t n = 0;
    const char* first = text_.data() + at_;
    const char* last = text_.data() + text_.size();
    const auto [stop, error] = std::from_chars(first, last, n);
    if (!ok_ || error != std::errc() || stop == last || *stop != end) {
      ok_ = false;
      return 0;
    }
    at_ = static_cast<std::size_t>(stop - text_.data()) + 1;
    return n;
  }
  std::string string() {
    const std::uint64_t size = number(':');
    if (!ok_ || size > text_.size() - at_) {
      ok_ = false;
      return {};
    }
    std::string out(text_.substr(at_, size));
    at_ += size;
    return out;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

std::string entry_name(const std::string& inputs_key) { return inputs_key.substr(0, 32); }
std::string entry_head(const std::string& inputs_key) {
  return record_magic() + "\n" + inputs_key + "\n";
}

}  // namespace

bool header_stamps_on() { return StampStore::open(stamps_store).has_value(); }

std::string resolution_inputs_key(const Program& program, const CompileOptions& options) {
  std::string text(record_magic());
  // The working directory: not for soundness (every probe is stat'ed again, relative paths
  // from where the process is), but so that the same compile run from two directories
  // keeps a record for each instead of replacing the other's.
  char cwd[4096];
  put_string(text, ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "");
  put_string(text, program.name());
  put_string(text, program.source());
  const std::vector<std::string> given = nvrtc_options(options);
  put_number(text, given.size());
  for (const std::string& option : given) put_string(text, option);
  put_number(text, options.headers.size());
  for (const Header& header : options.headers) {
    put_string(text, header.name);
    put_string(text, header.content);
  }
  return sha256_hex(text);
}

std::string encode_resolution(const ResolutionRecord& record) {
  std::string out;
  put_number(out, record.probes.size());
  for (const HeaderProbe& probe : record.probes) {
    put_string(out, probe.path);
    put_number(out, probe.present ? 1 : 0);
    put_number(out, probe.device);
    put_number(out, probe.inode);
    put_number(out, probe.size);
    put_number(out, static_cast<std::uint64_t>(probe.mtime_ns));
    put_number(out, static_cast<std::uint64_t>(probe.ctime_ns));
  }
  put_string(out, record.uncacheable);
  put_number(out, record.reads_disk ? 1 : 0);
  put_number(out, record.nvrtc_options.size());
  for (const std::string& option : record.nvrtc_options) put_string(out, option);
  put_number(out, record.key_fields.size());
  for (const std::string& field : record.key_fields) put_string(out, field);
  out += "end\n";
  return out;
}

std::optional<ResolutionRecord> decode_resolution(std::string_view text) {
  // The last line: a record cut short anywhere is no record.
  if (text.size() < 4 || text.substr(text.size() - 4) != "end\n") return std::nullopt;
  Reader in(text.substr(0, text.size() - 4));
  ResolutionRecord record;
  const std::uint64_t probes = in.number();
  for (std::uint64_t i = 0; in.ok() && i < probes; ++i) {
    HeaderProbe probe;
    probe.path = in.string();
    const std::uint64_t present = in.number();
    probe.present = present == 1;
    if (present > 1) return std::nullopt;
    probe.device = in.number();
    probe.inode = in.number();
    probe.size = in.number();
    probe.mtime_ns = static_cast<std::int64_t>(in.number());
    probe.ctime_ns = static_cast<std::int64_t>(in.number());
    if (probe.path.empty()) return std::nullopt;
    record.probes.push_back(std::move(probe));
  }
  record.uncacheable = in.string();
  const std::uint64_t reads_disk = in.number();
  if (reads_disk > 1) return std::nullopt;
  record.reads_disk = reads_disk == 1;
  const std::uint64_t options = in.number();
  for (std::uint64_t i = 0; in.ok() && i < options; ++i) record.nvrtc_options.push_back(in.string());
  const std::uint64_t fields = in.number();
  // The key fields come in threes (name, content, include targets).
  if (fields % 3 != 0) return std::nullopt;
  for (std::uint64_t i = 0; in.ok() && i < fields; ++i) record.key_fields.push_back(in.string());
  if (!in.done()) return std::nullopt;
  return record;
}

std::shared_ptr<const ResolutionRecord> recall_resolution(const std::string& inputs_key) {
  {
    const std::lock_guard<std::mutex> lock(memory_mutex);
    if (const auto found = in_memory.find(inputs_key); found != in_memory.end()) return found->second;
  }
  const std::optional<StampStore> store = StampStore::open(stamps_store);
  if (!store) return nullptr;
  const std::optional<std::string> text = store->read(entry_name(inputs_key), entry_head(inputs_key));
  if (!text) return nullptr;
  std::optional<ResolutionRecord> record = decode_resolution(*text);
  if (!record) return nullptr;
  auto shared = std::make_shared<const ResolutionRecord>(std::move(*record));
  const std::lock_guard<std::mutex> lock(memory_mutex);
  keep_in_memory(inputs_key, shared);
  return shared;
}

bool probes_hold(const ResolutionRecord& record) {
  for (const HeaderProbe& probe : record.probes) {
    struct stat info {};
    const bool present = ::stat(probe.path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
    if (present != probe.present) return false;
    if (!present) continue;
    if (static_cast<std::uint64_t>(info.st_dev) != probe.device || static_cast<std::uint64_t>(info.st_ino) != probe.inode ||
        static_cast<std::uint64_t>(info.st_size) != probe.size || nanoseconds(info.st_mtim) != probe.mtime_ns ||
        nanoseconds(info.st_ctim) != probe.ctime_ns) {
      return false;
    }
  }
  recalled.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void remember_resolution(const std::string& inputs_key, ResolutionRecord record) {
  const std::optional<StampStore> store = StampStore::open(stamps_store);
  if (!store) return;
  for (const HeaderProbe& probe : record.probes) {
    if (probe.present && changed_too_recently(probe.mtime_ns, probe.ctime_ns)) return;
  }
  store->write(entry_name(inputs_key), entry_head(inputs_key) + encode_resolution(record));
  stored.fetch_add(1, std::memory_order_relaxed);
  auto shared = std::make_shared<const ResolutionRecord>(std::move(record));
  const std::lock_guard<std::mutex> lock(memory_mutex);
  keep_in_memory(inputs_key, std::move(shared));
}

void forget_resolution(const std::string& inputs_key) {
  {
    const std::lock_guard<std::mutex> lock(memory_mutex);
    if (const auto found = in_memory.find(inputs_key); found != in_memory.end()) {
      memory_bytes -= size_of(*found->second);
      in_memory.erase(found);
    }
  }
  if (const std::optional<StampStore> store = StampStore::open(stamps_store)) store->remove(entry_name(inputs_key));
}

std::size_t resolutions_recalled() noexcept { return recalled.load(std::memory_order_relaxed); }
std::size_t resolutions_stored() noexcept { return stored.load(std::memory_order_relaxed); }

}  // namespace cujit::detail
