// User-defined value types (reduce::UserType) on both reduce backends: an argmin over
// {float value; int index} pairs and a 24-byte vector sum build to cubins without a GPU and
// match a host reference on one, opaque storage types take a CUDA C++ operator, and what no
// backend can do (a scalar-signature operator, a size that is no multiple of the alignment,
// a definition whose size disagrees) is refused with the type's name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "cujit/reduce.hpp"
#include "support/fixtures.hpp"
#include "support/reduce_data.hpp"

namespace cujit {
namespace {

using reduce::Backend;
using reduce::Operator;
using reduce::ReduceSpec;
using reduce::UserType;

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// The argmin pair: the smaller value, ties to the smaller index (a total order, so the
// result does not depend on the reduction's order or grouping).
struct Pair {
  float value;
  int index;
};
UserType pair_type() {
  return UserType{"pair", sizeof(Pair), alignof(Pair), "struct pair { float value; int index; };"};
}
Operator argmin_op() {
  return Operator::cuda_source(
      "extern \"C\" __device__ pair argmin(pair a, pair b) {\n"
      "  if (b.value < a.value || (b.value == a.value && b.index < a.index)) return b;\n"
      "  return a;\n"
      "}\n",
      "argmin");
}

// 24 bytes, larger than any vector load.
struct Vec3 {
  double x, y, z;
};
UserType vec3_type() { return UserType{"vec3", sizeof(Vec3), alignof(Vec3), "struct vec3 { double x, y, z; };"}; }
Operator vec3_sum_op() {
  return Operator::cuda_source(
      "extern \"C\" __device__ vec3 add_vec3(vec3 a, vec3 b) { return vec3{a.x + b.x, a.y + b.y, a.z + b.z}; }\n",
      "add_vec3");
}

ReduceSpec spec_for(UserType type, Operator op, Backend backend, const std::string& arch = "sm_90") {
  ReduceSpec spec;
  spec.user_type = std::move(type);
  spec.op = std::move(op);
  spec.arch = Arch::parse(arch);
  spec.backend = backend;
  return spec;
}

const Backend backends[] = {Backend::handwritten, Backend::cub};

// ---- CPU -----------------------------------------------------------------------------

TEST(ReduceUserType, PairsAndA24ByteTypeBuildOnBothBackends) {
  for (Backend backend : backends) {
    SCOPED_TRACE(reduce::to_string(backend));
    for (const auto& [type, op] : {std::pair{pair_type(), argmin_op()}, std::pair{vec3_type(), vec3_sum_op()}}) {
      const reduce::ReduceBuild build = reduce::build_reduce(spec_for(type, op, backend));
      EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin) << type.name;
      EXPECT_EQ(build.accumulator_size, type.size) << type.name;
      EXPECT_EQ(build.input_size, type.size) << type.name;
      EXPECT_EQ(build.output_size, type.size) << type.name;
    }
  }
}

// Without a definition the type is opaque storage of its size and alignment, which the
// operator sees under its name too.
TEST(ReduceUserType, OpaqueStorageTakesACudaOperator) {
  const Operator first_byte_max = Operator::cuda_source(
      "extern \"C\" __device__ blob keep_larger(blob a, blob b) { return a.bytes[0] < b.bytes[0] ? b : a; }\n",
      "keep_larger");
  for (Backend backend : backends) {
    for (std::size_t size : {std::size_t{3}, std::size_t{32}}) {
      const reduce::ReduceBuild build =
          reduce::build_reduce(spec_for(UserType{"blob", size, 1, ""}, first_byte_max, backend));
      EXPECT_EQ(detect_format(build.code.bytes()), Format::cubin) << reduce::to_string(backend) << " " << size;
      EXPECT_EQ(build.accumulator_size, size);
    }
  }
}

TEST(ReduceUserType, OperatorsWithScalarSignaturesAreRefused) {
  const abi::DeviceFunction fn = test::max_i32_device_function();
  const Operator foreign = Operator::foreign(
      LinkableCode::from_path(test::scenario_path("fixtures/numba/min_i32_c_abi.ltoir")), "min_i32",
      Signature::parse("int32(int32, int32)"));
  for (Backend backend : backends) {
    for (const Operator& op : {Operator::builtin(reduce::Builtin::min), Operator::device_function(fn), foreign}) {
      CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for(pair_type(), op, backend, "sm_90a")),
                         ErrorKind::usage, error,
                         EXPECT_TRUE(contains(error.what(), "pair")) << error.what();
                         EXPECT_TRUE(contains(error.what(), "CUDA C++")) << error.what(););
    }
  }
}

TEST(ReduceUserType, BadShapesAndNamesAreRefused) {
  const std::vector<UserType> bad = {
      UserType{"pair", 0, 1, ""},   UserType{"pair", 6, 4, ""},  UserType{"pair", 8, 3, ""},
      UserType{"pair", 512, 512, ""}, UserType{"9pair", 8, 4, ""}, UserType{"cujit_acc", 8, 4, ""},
  };
  for (Backend backend : backends) {
    for (const UserType& type : bad) {
      CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for(type, argmin_op(), backend)), ErrorKind::usage, error,
                         EXPECT_TRUE(contains(error.what(), type.name)) << error.what(););
    }
  }
}

// A definition whose size or alignment disagrees with the stated ones fails to compile, and
// the log says which type and which size.
TEST(ReduceUserType, ADefinitionThatDisagreesWithItsSizeIsACompileError) {
  for (Backend backend : backends) {
    for (const UserType& type : {UserType{"pair", 12, 4, "struct pair { float value; int index; };"},
                                 UserType{"pair", 8, 8, "struct pair { float value; int index; };"}}) {
      CUJIT_EXPECT_ERROR((void)reduce::build_reduce(spec_for(type, argmin_op(), backend)), ErrorKind::compile,
                         error,
                         EXPECT_TRUE(contains(error.log(), "user type pair is not " + std::to_string(type.size)))
                             << error.log(););
    }
  }
}

// The definition is part of what is compiled, so two types of the same size and name but
// different fields are different builds.
TEST(ReduceUserType, TheDefinitionIsInTheKey) {
  UserType swapped = pair_type();
  swapped.definition = "struct pair { float value; unsigned index; };";
  for (Backend backend : backends) {
    const auto key = [&](const UserType& type) { return reduce::build_reduce(spec_for(type, argmin_op(), backend)).key; };
    EXPECT_NE(key(pair_type()), key(swapped)) << reduce::to_string(backend);
  }
}

// ---- GPU -----------------------------------------------------------------------------

// Ascending (each test folds the host reference on from the previous n): up to 2^28 items,
// 2 GiB of pairs and 6 GiB of 24-byte items. CUJIT_TEST_MAX_N caps them (compute-sanitizer).
std::vector<std::uint64_t> sizes_up_to_cap() {
  return test::sizes_up_to_cap({0ull, 1ull, 2ull, 1023ull, 1024ull, (1ull << 16) + 1, 1ull << 22, 1ull << 28});
}

std::uint32_t mix(std::uint64_t i) {
  return static_cast<std::uint32_t>(i * 2654435761ull) ^ static_cast<std::uint32_t>(i >> 15);
}

// Argmin over pairs (value from a hash, many ties; index = position) on both backends
// against the host, every n up to 2^28.
TEST(GpuReduceUserType, ArgminOverPairsMatchesTheHost) {
  CUJIT_REQUIRE_DEVICE();
  const std::vector<std::uint64_t> sizes = sizes_up_to_cap();
  const std::uint64_t largest = std::max<std::uint64_t>(sizes.back(), 1);
  std::vector<Pair> host(largest);
  for (std::uint64_t i = 0; i < largest; ++i) {
    host[i] = Pair{static_cast<float>(mix(i) % 50000) / 8.0f, static_cast<int>(i)};
  }
  DeviceBuffer in(largest * sizeof(Pair)), out(sizeof(Pair));
  in.copy_from_host(host.data(), largest * sizeof(Pair));
  const Pair init{std::numeric_limits<float>::max(), std::numeric_limits<int>::max()};
  const std::string arch = Arch::of_device(0).sm();
  for (Backend backend : backends) {
    const reduce::ReduceBuild build = reduce::build_reduce(spec_for(pair_type(), argmin_op(), backend, arch));
    Pair want = init;
    std::uint64_t folded = 0;
    for (std::uint64_t n : sizes) {
      SCOPED_TRACE(testing::Message() << reduce::to_string(backend) << " n=" << n);
      for (; folded < n; ++folded) {
        const Pair& item = host[folded];
        if (item.value < want.value || (item.value == want.value && item.index < want.index)) want = item;
      }
      out.fill_bytes(0xA5);
      reduce::reduce_into(build, in.ptr(), out.ptr(), n, arg_value(init));
      synchronize(nullptr);
      Pair got{};
      out.copy_to_host(&got, sizeof got);
      EXPECT_EQ(got.value, want.value);
      EXPECT_EQ(got.index, want.index);
    }
  }
}

// A 24-byte sum (components multiples of 1/64, so exact in double in any order) on both
// backends against the host, every n.
TEST(GpuReduceUserType, A24ByteSumMatchesTheHost) {
  CUJIT_REQUIRE_DEVICE();
  const std::vector<std::uint64_t> sizes = sizes_up_to_cap();
  const std::uint64_t largest = std::max<std::uint64_t>(sizes.back(), 1);
  std::vector<Vec3> host(largest);
  for (std::uint64_t i = 0; i < largest; ++i) {
    host[i] = Vec3{static_cast<double>(mix(i) % 2000) / 64.0, -static_cast<double>(i % 77) / 64.0, 1.0};
  }
  DeviceBuffer in(largest * sizeof(Vec3)), out(sizeof(Vec3));
  in.copy_from_host(host.data(), largest * sizeof(Vec3));
  const Vec3 init{0.5, 0.25, 2.0};
  const std::string arch = Arch::of_device(0).sm();
  for (Backend backend : backends) {
    const reduce::ReduceBuild build = reduce::build_reduce(spec_for(vec3_type(), vec3_sum_op(), backend, arch));
    Vec3 want = init;
    std::uint64_t folded = 0;
    for (std::uint64_t n : sizes) {
      SCOPED_TRACE(testing::Message() << reduce::to_string(backend) << " n=" << n);
      for (; folded < n; ++folded) {
        want.x += host[folded].x;
        want.y += host[folded].y;
        want.z += host[folded].z;
      }
      out.fill_bytes(0xA5);
      reduce::reduce_into(build, in.ptr(), out.ptr(), n, arg_value(init));
      synchronize(nullptr);
      Vec3 got{};
      out.copy_to_host(&got, sizeof got);
      EXPECT_EQ(got.x, want.x);
      EXPECT_EQ(got.y, want.y);
      EXPECT_EQ(got.z, want.z);
    }
  }
}

}  // namespace
}  // namespace cujit
