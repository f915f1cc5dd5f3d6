#pragma once
// What the two C++ programs of the "exec to first result" family share: the problem (the
// inputs, the launch shape, the check) and the one JSON line each prints. Header-only, so
// the raw driver program links nothing but the driver.
//
// The problem: y = a * x + y over n floats, with inputs chosen so that every result is a
// small whole number, exact in float with or without a fused multiply-add: the check is
// exact equality, the same in every program (child_common.py holds the Python side).

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace cujit::first_result {

inline constexpr int n = 1 << 20;
inline constexpr float a = 2.0f;
inline constexpr unsigned block = 256;
inline constexpr unsigned grid = (n + block - 1) / block;
inline constexpr const char* kernel_name = "saxpy";

inline float x_at(int i) { return static_cast<float>(i % 1024); }
inline float y_at(int i) { return static_cast<float>(i % 7); }
inline float expected_at(int i) { return static_cast<float>(2 * (i % 1024) + i % 7); }

inline std::vector<float> inputs_x() {
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = x_at(i);
  return x;
}

inline std::vector<float> inputs_y() {
  std::vector<float> y(n);
  for (int i = 0; i < n; ++i) y[i] = y_at(i);
  return y;
}

// Empty when every element is right; otherwise names the first wrong element.
inline std::string check(const std::vector<float>& y) {
  if (y.size() != static_cast<std::size_t>(n)) return "result has " + std::to_string(y.size()) + " elements";
  for (int i = 0; i < n; ++i) {
    if (y[i] != expected_at(i)) {
      return "wrong result: y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + ", expected " +
             std::to_string(expected_at(i));
    }
  }
  return {};
}

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double>(end - start).count();
}

// JSON string contents: quotes, backslashes and control characters escaped; other bytes
// as they are (error texts are ASCII from the driver and cujit).
inline std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

// What a program reports; ok only once the result was checked.
struct Result {
  std::string program;
  double context_s = 0;
  double build_launch_s = 0;
  bool ok = false;
  std::string error;
};

// The one line on stdout, flushed at once: the parent's clock stops when it arrives.
inline void print(const Result& result) {
  std::printf("{\"program\": \"%s\", \"context_s\": %.9f, \"build_launch_s\": %.9f, \"ok\": %s, \"error\": \"%s\"}\n",
              json_escape(result.program).c_str(), result.context_s, result.build_launch_s,
              result.ok ? "true" : "false", json_escape(result.error).c_str());
  std::fflush(stdout);
}

}  // namespace cujit::first_result
