#include "link/prototype_check.hpp"

#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>

namespace cujit::detail {
namespace {

// nvJitLink 13.0 takes .b, .u and .s of one width for each other, but not a floating-point
// type for an integer one of the same width (".b64" against ".f64" is a mismatch).
bool floating(const PtxParameter& parameter) {
  return parameter.type.rfind(".f", 0) == 0 || parameter.type.rfind(".bf", 0) == 0;
}

bool same_widths(const std::vector<PtxParameter>& a, const std::vector<PtxParameter>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].bytes != b[i].bytes || floating(a[i]) != floating(b[i])) return false;
  }
  return true;
}

// numba's ABI: `int status f(T* result, args...)`.
bool numba_abi_shape(const PtxPrototype& prototype) {
  return prototype.returns.size() == 1 && prototype.returns.front().bytes == 4 &&
         !prototype.parameters.empty() && prototype.parameters.front().bytes == 8;
}

// A C-ABI function that numba's ABI `numba` would be if its result were returned: one
// parameter fewer, the same arguments after the result pointer.
bool c_abi_of(const PtxPrototype& numba, const PtxPrototype& c) {
  if (c.parameters.size() + 1 != numba.parameters.size()) return false;
  const std::vector<PtxParameter> arguments(numba.parameters.begin() + 1, numba.parameters.end());
  return same_widths(arguments, c.parameters);
}

bool may_declare(std::string_view ptx) {
  return ::memmem(ptx.data(), ptx.size(), ".extern", 7) != nullptr;
}

// The prototypes of a PTX input, remembered by exact content for the process: the same
// library (NRT's 23 KB of PTX, an operator) is linked again and again, and comparing its
// bytes costs a small part of scanning them. Bounded as defined_symbols' memo is.
class PrototypesMemo {
 public:
  std::shared_ptr<const std::vector<PtxPrototype>> get(const Bytes& bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first != bytes) continue;
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front().second;
      }
    }
    auto prototypes = std::make_shared<const std::vector<PtxPrototype>>(function_prototypes(bytes));
    if (bytes.size() > max_bytes / 4) return prototypes;  // too large to keep
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace_front(bytes, prototypes);
    bytes_ += bytes.size();
    while (entries_.size() > max_entries || bytes_ > max_bytes) {
      bytes_ -= entries_.back().first.size();
      entries_.pop_back();
    }
    return prototypes;
  }

 private:
  static constexpr std::size_t max_entries = 64;
  static constexpr std::size_t max_bytes = std::size_t{32} << 20;
  std::mutex mutex_;
  std::list<std::pair<Bytes, std::shared_ptr<const std::vector<PtxPrototype>>>> entries_;  // most recent first
  std::size_t bytes_ = 0;
};

std::shared_ptr<const std::vector<PtxPrototype>> remembered_prototypes(const Bytes& bytes) {
  static PrototypesMemo* memo = new PrototypesMemo();  // never destroyed: links may run at exit
  return memo->get(bytes);
}

}  // namespace

bool same_shape(const PtxPrototype& a, const PtxPrototype& b) noexcept {
  return same_widths(a.returns, b.returns) && same_widths(a.parameters, b.parameters);
}

std::string likely_cause(const PtxPrototype& declared, const PtxPrototype& defined) {
  if (numba_abi_shape(declared) && c_abi_of(declared, defined)) {
    return "the declaration has numba's ABI (a pointer to the result first, an int status "
           "returned) and the definition the C ABI (the result returned): declare it with the C "
           "ABI, or compile the definition with numba's ABI";
  }
  if (numba_abi_shape(defined) && c_abi_of(defined, declared)) {
    return "the definition has numba's ABI (a pointer to the result first, an int status "
           "returned) and the declaration the C ABI (the result returned): declare it with "
           "numba's ABI, or compile the definition with the C ABI";
  }
  return {};
}

std::vector<PrototypeConflict> prototype_conflicts(const std::vector<const LinkableCode*>& inputs) {
  std::vector<const LinkableCode*> ptx;
  bool declares = false;
  for (const LinkableCode* code : inputs) {
    if (code->format() != Format::ptx) continue;
    ptx.push_back(code);
    declares = declares || may_declare(code->bytes());
  }
  if (ptx.size() < 2 || !declares) return {};
  std::vector<std::shared_ptr<const std::vector<PtxPrototype>>> prototypes;
  std::map<std::string_view, std::pair<std::size_t, const PtxPrototype*>> definitions;  // first one
  prototypes.reserve(ptx.size());
  for (const LinkableCode* code : ptx) prototypes.push_back(remembered_prototypes(code->bytes()));
  for (std::size_t i = 0; i < ptx.size(); ++i) {
    for (const PtxPrototype& prototype : *prototypes[i]) {
      if (!prototype.declaration) definitions.emplace(prototype.name, std::pair{i, &prototype});
    }
  }
  std::vector<PrototypeConflict> out;
  for (std::size_t i = 0; i < ptx.size(); ++i) {
    for (const PtxPrototype& declared : *prototypes[i]) {
      if (!declared.declaration) continue;
      const auto found = definitions.find(declared.name);
      if (found == definitions.end() || found->second.first == i) continue;
      const PtxPrototype& defined = *found->second.second;
      if (same_shape(declared, defined)) continue;
      out.push_back(PrototypeConflict{declared.name, ptx[i], declared, ptx[found->second.first], defined});
    }
  }
  return out;
}

}  // namespace cujit::detail
