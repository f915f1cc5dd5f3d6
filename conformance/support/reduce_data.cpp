#include "support/reduce_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "cujit/program.hpp"
#include "cujit/linker.hpp"

namespace cujit::test {
namespace {

constexpr const char* fill_source = R"(
__device__ unsigned cujit_mix(unsigned long long i) {
  return static_cast<unsigned>(i * 2654435761ull) ^ static_cast<unsigned>(i >> 15);
}
template <class T> __device__ T cujit_value(unsigned long long i, int kind) {
  const unsigned h = cujit_mix(i) % 2001u;
  if (kind == 0) return static_cast<T>(static_cast<int>(h) - 1000);  // signed
  if (kind == 1) return static_cast<T>(h);                           // unsigned
  return static_cast<T>(h) / static_cast<T>(64);                     // floating
}
template <class T> __global__ void cujit_fill(T* out, unsigned long long n, int kind) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull)
    out[i] = cujit_value<T>(i, kind);
}
)";

int kind_of(const Type& type) {
  switch (type.scalar) {
    case Scalar::float32:
    case Scalar::float64: return 2;
    case Scalar::uint8:
    case Scalar::uint16:
    case Scalar::uint32:
    case Scalar::uint64: return 1;
    default: return 0;
  }
}

long double host_value(const Type& type, std::uint64_t i) {
  const std::uint32_t h = mix(i) % 2001u;
  switch (kind_of(type)) {
    case 0: return static_cast<long double>(static_cast<int>(h) - 1000);
    case 1: return static_cast<long double>(h);
    default:
      return type.scalar == Scalar::float32
                 ? static_cast<long double>(static_cast<float>(h) / 64.0f)
                 : static_cast<long double>(static_cast<double>(h) / 64.0);
  }
}

const Kernel& fill_kernel(const Type& type) {
  static std::mutex mutex;
  static std::map<std::string, Kernel> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string expression = "cujit_fill<" + type.cuda() + ">";
  if (auto found = kernels.find(expression); found != kernels.end()) return found->second;
  CompileOptions options;
  options.target = CompileTarget::cubin;
  options.arch = Arch::of_device(0);
  options.name_expressions = {expression};
  const CompileResult compiled = Program(fill_source, "fill.cu").compile(options);
  auto module = Module::load(compiled.code);
  return kernels.emplace(expression, module->kernel_for_expression(expression)).first->second;
}

// Wraps v (an exact integer in long double, possibly huge) into `type`'s range.
long double wrap_integer(const Type& type, long double v) {
  const unsigned bits = static_cast<unsigned>(type.size() * 8);
  // v is a sum of at most 2^31 values of magnitude <= 2000: it fits in int64.
  const auto as_int = static_cast<long long>(v);
  std::uint64_t u = static_cast<std::uint64_t>(as_int);
  if (bits < 64) u &= (std::uint64_t{1} << bits) - 1;
  if (kind_of(type) == 1) return static_cast<long double>(u);
  // signed: two's complement of `bits` bits
  if (bits < 64 && (u >> (bits - 1)) != 0) return static_cast<long double>(static_cast<long long>(u) - (1ll << bits));
  return static_cast<long double>(static_cast<long long>(u));
}

}  // namespace

void fill_device(const Type& type, DevicePtr out, std::uint64_t count) {
  if (count == 0) return;
  const Kernel& kernel = fill_kernel(type);
  LaunchConfig config;
  config.grid.x = static_cast<unsigned>(std::min<std::uint64_t>((count + 255) / 256, 65535));
  config.block.x = 256;
  const unsigned long long n = count;
  kernel(config, out, n, kind_of(type));
}

Reference reference(const Type& type, reduce::Builtin op, std::uint64_t n, long double init) {
  const unsigned workers = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<Reference> parts(workers);
  // Not vector<bool>: its elements share words, so writes from several threads would race.
  std::vector<char> seen(workers, 0);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      const std::uint64_t begin = n * w / workers, end = n * (w + 1) / workers;
      Reference part;
      bool have = false;
      for (std::uint64_t i = begin; i < end; ++i) {
        const long double x = host_value(type, i);
        part.sum_abs += std::fabs(x);
        if (op == reduce::Builtin::sum) {
          part.value += x;
        } else if (!have) {
          part.value = x;
        } else {
          part.value = op == reduce::Builtin::min ? std::min(part.value, x) : std::max(part.value, x);
        }
        have = true;
      }
      parts[w] = part;
      seen[w] = have ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  Reference total{init, std::fabs(init)};
  for (unsigned w = 0; w < workers; ++w) {
    if (seen[w] == 0) continue;
    total.sum_abs += parts[w].sum_abs;
    if (op == reduce::Builtin::sum) {
      total.value += parts[w].value;
    } else {
      total.value = op == reduce::Builtin::min ? std::min(total.value, parts[w].value)
                                               : std::max(total.value, parts[w].value);
    }
  }
  if (kind_of(type) != 2) total.value = wrap_integer(type, total.value);
  return total;
}

long double read_result(const Type& type, DevicePtr out) {
  unsigned char bytes[8] = {};
  copy_to_host(bytes, out, type.size());
  switch (type.scalar) {
    case Scalar::int8: { std::int8_t v; std::memcpy(&v, bytes, 1); return v; }
    case Scalar::int16: { std::int16_t v; std::memcpy(&v, bytes, 2); return v; }
    case Scalar::uint8: { std::uint8_t v; std::memcpy(&v, bytes, 1); return v; }
    case Scalar::uint16: { std::uint16_t v; std::memcpy(&v, bytes, 2); return v; }
    case Scalar::int32: { std::int32_t v; std::memcpy(&v, bytes, 4); return v; }
    case Scalar::int64: { std::int64_t v; std::memcpy(&v, bytes, 8); return static_cast<long double>(v); }
    case Scalar::uint32: { std::uint32_t v; std::memcpy(&v, bytes, 4); return v; }
    case Scalar::uint64: { std::uint64_t v; std::memcpy(&v, bytes, 8); return static_cast<long double>(v); }
    case Scalar::float32: { float v; std::memcpy(&v, bytes, 4); return v; }
    case Scalar::float64: { double v; std::memcpy(&v, bytes, 8); return v; }
    default: return std::numeric_limits<long double>::quiet_NaN();
  }
}

std::vector<std::uint64_t> sizes_up_to_cap(const std::vector<std::uint64_t>& all) {
  const char* cap_text = std::getenv("CUJIT_TEST_MAX_N");
  const std::uint64_t cap = cap_text != nullptr ? std::strtoull(cap_text, nullptr, 10) : ~std::uint64_t{0};
  std::vector<std::uint64_t> out;
  for (const std::uint64_t n : all) {
    if (n <= cap) out.push_back(n);
  }
  return out;
}

}  // namespace cujit::test
