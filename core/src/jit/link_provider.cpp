#include "cujit/link_provider.hpp"

#include <atomic>
#include <map>
#include <optional>

#include "cujit/error.hpp"
#include "support/record.hpp"

namespace cujit {
namespace {

std::uint64_t next_provider_identity() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// A provider's answer as a cache payload: each item's format, name, NRT flag, bytes and
// lowered names.
std::string encode_items(const std::vector<LinkableCode>& items) {
  detail::Record record{{"count", std::to_string(items.size())}};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string prefix = std::to_string(i) + ".";
    record[prefix + "format"] = std::string(to_string(items[i].format()));
    record[prefix + "name"] = items[i].name();
    record[prefix + "nrt"] = items[i].nrt() ? "1" : "0";
    record[prefix + "bytes"] = items[i].bytes();
    for (const auto& [expression, lowered] : items[i].lowered_names()) {
      record[prefix + "lowered:" + expression] = lowered;
    }
  }
  return detail::encode_record(record);
}

std::optional<std::vector<LinkableCode>> decode_items(std::string_view payload) {
  const auto record = detail::decode_record(payload);
  if (!record || record->count("count") == 0) return std::nullopt;
  std::size_t count = 0;
  try {
    count = std::stoul(record->at("count"));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (count > record->size()) return std::nullopt;
  std::vector<LinkableCode> items;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string prefix = std::to_string(i) + ".";
    const auto field = [&](const char* name) -> const std::string* {
      const auto found = record->find(prefix + name);
      return found == record->end() ? nullptr : &found->second;
    };
    const std::string *format = field("format"), *name = field("name"), *nrt = field("nrt"), *bytes = field("bytes");
    if (!format || !name || !nrt || !bytes || !parse_format(*format)) return std::nullopt;
    std::map<std::string, std::string> lowered;
    const std::string lowered_prefix = prefix + "lowered:";
    for (auto at = record->lower_bound(lowered_prefix); at != record->end() && at->first.rfind(lowered_prefix, 0) == 0; ++at) {
      lowered.emplace(at->first.substr(lowered_prefix.size()), at->second);
    }
    try {
      items.push_back(LinkableCode::from_bytes(*parse_format(*format), *bytes, *name)
                          .set_nrt(*nrt == "1")
                          .set_lowered_names(std::move(lowered)));
    } catch (const Error&) {
      return std::nullopt;  // bytes that are not what the format says: a miss
    }
  }
  return items;
}

}  // namespace

std::string LinkProvider::memory_name() const {
  if (const std::optional<std::string> declared = version()) return name() + "@" + *declared;
  return "#" + std::to_string(identity_);
}

std::shared_ptr<const std::vector<LinkableCode>> remembered_code_for(LinkProvider& provider,
                                                                     const Signature& signature,
                                                                     BuildCache& cache, bool* asked) {
  using Items = std::vector<LinkableCode>;
  if (asked != nullptr) *asked = false;
  const std::optional<std::string> version = provider.version();
  const std::string memo_key = "provider:" + provider.memory_name() + ":" + signature.str();
  if (auto remembered = cache.recall<Items>(memo_key)) return remembered;
  const auto ask = [&] {
    if (asked != nullptr) *asked = true;
    return provider.code_for(signature);
  };
  const auto bytes_of = [](const Items& items) {
    std::uint64_t bytes = 0;
    for (const LinkableCode& item : items) bytes += item.bytes().size();
    return bytes;
  };
  std::shared_ptr<const Items> items;
  if (!version) {
    items = std::make_shared<const Items>(ask());
  } else {
    // Named by what the provider declares, so another object or process finds it.
    CacheKey key("provider");
    key.add("provider", provider.name()).add("version", *version).add("signature", signature.str());
    std::string payload = cache.get_or_build(key, [&] { return encode_items(ask()); });
    auto decoded = decode_items(payload);
    if (!decoded) {
      // Replaced in every tier by a fresh answer, counted as a miss and a repair.
      payload = cache.rebuild(key, "the remembered provider answer does not decode", [&] { return encode_items(ask()); });
      decoded = decode_items(payload);
      if (!decoded) decoded = ask();
    }
    items = std::make_shared<const Items>(std::move(*decoded));
  }
  cache.memorize(memo_key, items, bytes_of(*items));
  return items;
}

LinkProvider::LinkProvider() noexcept : identity_(next_provider_identity()) {}
LinkProvider::LinkProvider(const LinkProvider&) noexcept : identity_(next_provider_identity()) {}

std::string DeclaredFunction::symbol(const Signature& signature) const {
  if (abi == abi::Abi::c) return abi_name.value_or(name);
  return abi::mangle_numba(module, name, signature.args, numba_flags, numba_uid);
}

void DeclaredFunction::validate() const {
  const std::string component = "DeclaredFunction";
  if (!abi::is_identifier(name)) {
    throw Error(ErrorKind::usage, component, "'" + name + "' is not an identifier");
  }
  if (signatures.empty()) {
    throw Error(ErrorKind::usage, component, "'" + name + "' declares no signature");
  }
  if (abi == abi::Abi::c && signatures.size() != 1) {
    throw Error(ErrorKind::usage, component,
                "'" + name + "' has " + std::to_string(signatures.size()) +
                    " signatures; the C ABI has one symbol per function, so it allows one "
                    "(use the numba ABI for overloads)");
  }
  if (abi_name && (abi != abi::Abi::c || !abi::is_identifier(*abi_name))) {
    throw Error(ErrorKind::usage, component,
                "'" + name + "': abi_name '" + *abi_name +
                    "' needs the C ABI and must be an identifier");
  }
}

std::string declarations_header(std::span<const DeclaredFunction> functions) {
  std::string out = "// Generated by cujit: the device functions this kernel may call.\n#pragma once\n";
  for (const DeclaredFunction& function : functions) {
    for (const Signature& signature : function.signatures) {
      const std::string symbol = function.symbol(signature);
      out += abi::declaration_of(symbol, signature, function.abi) + "\n";
      std::string params, args;
      for (std::size_t i = 0; i < signature.args.size(); ++i) {
        params += (i ? ", " : "") + signature.args[i].cuda() + " a" + std::to_string(i);
        args += (i ? ", a" : "a") + std::to_string(i);
      }
      if (function.abi == abi::Abi::c) {
        if (symbol == function.name) continue;  // callable by its name already
        out += "static __device__ __forceinline__ " + signature.result.cuda() + " " +
               function.name + "(" + params + ") { return " + symbol + "(" + args + "); }\n";
        continue;
      }
      const bool is_void = signature.result.is_void();
      const std::string result = is_void ? "" : signature.result.cuda() + " r; ";
      const std::string call =
          symbol + "(" + (is_void ? "nullptr" : "&r") + (args.empty() ? "" : ", ") + args + ")";
      out += "static __device__ __forceinline__ " + signature.result.cuda() + " " +
             function.name + "(" + params + ") { " + result + "if (" + call +
             " != 0) __trap(); " + (is_void ? "" : "return r; ") + "}\n";
    }
  }
  return out;
}

}  // namespace cujit
