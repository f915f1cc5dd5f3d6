#include "compile/numba_tag_encoding.hpp"

#include <array>
#include <cstdint>
#include <algorithm>
#include <vector>

namespace cujit::abi::detail {
namespace {

// zlib's level 9 and window parameters that decide which matches are taken.
constexpr int min_match = 3;
constexpr int max_match = 258;
constexpr int good_length = 32;   // from here on the chain searched is a quarter as long
constexpr int max_lazy = 258;     // a match this long is taken without a lazy look
constexpr int nice_length = 258;  // a match this long ends the search
constexpr unsigned max_chain = 4096;
constexpr unsigned window_size = 32768;
constexpr unsigned min_lookahead = max_match + min_match + 1;
constexpr unsigned max_distance = window_size - min_lookahead;
constexpr unsigned too_far = 4096;  // a 3-byte match further back than this is not worth it
constexpr unsigned hash_bits = 15;  // memLevel 8
constexpr unsigned hash_shift = (hash_bits + min_match - 1) / min_match;
constexpr unsigned hash_mask = (1u << hash_bits) - 1;

struct Symbol {
  int literal_or_length;  // < 256: a literal byte; else the match length
  unsigned distance;      // 0 for a literal
};

// The LZ77 pass of zlib's deflate_slow: at each position the longest match among earlier
// positions with the same 3-byte hash, most recent first; a match is emitted only if the
// next position does not start a longer one (lazy evaluation).
std::vector<Symbol> lz77(const std::vector<unsigned char>& window, unsigned start,
                         unsigned end) {
  std::vector<std::uint16_t> head(1u << hash_bits, 0), prev(window_size, 0);
  auto hash_at = [&](unsigned p) {
    unsigned h = 0;
    for (int i = 0; i < min_match; ++i) h = ((h << hash_shift) ^ window[p + i]) & hash_mask;
    return h;
  };
  // Inserting p makes it the newest entry of its chain and returns the previous newest.
  auto insert = [&](unsigned p) -> unsigned {
    const unsigned h = hash_at(p);
    const unsigned older = head[h];
    prev[p & (window_size - 1)] = static_cast<std::uint16_t>(older);
    head[h] = static_cast<std::uint16_t>(p);
    return older;
  };
  // The dictionary's strings are all in the chains before the data is read (position 0,
  // zlib's NIL, is inserted but never found).
  for (unsigned p = 0; p + min_match <= end && p < start; ++p) insert(p);

  unsigned strstart = start, lookahead = end - start, match_start = 0;
  unsigned match_length = min_match - 1, prev_length = 0, prev_match = 0;
  bool match_available = false;

  auto longest_match = [&](unsigned cur_match) -> unsigned {
    unsigned chain = max_chain;
    unsigned best_len = prev_length;
    unsigned nice = nice_length;
    const unsigned limit = strstart > max_distance ? strstart - max_distance : 0;
    if (prev_length >= static_cast<unsigned>(good_length)) chain >>= 2;
    if (nice > lookahead) nice = lookahead;
    do {
      const unsigned char* scan = &window[strstart];
      const unsigned char* match = &window[cur_match];
      if (match[best_len] != scan[best_len] || match[best_len - 1] != scan[best_len - 1] ||
          match[0] != scan[0] || match[1] != scan[1]) {
        continue;
      }
      unsigned len = 2;
      while (len < static_cast<unsigned>(max_match) && scan[len] == match[len]) ++len;
      if (len > best_len) {
        match_start = cur_match;
        best_len = len;
        if (len >= nice) break;
      }
    } while ((cur_match = prev[cur_match & (window_size - 1)]) > limit && --chain != 0);
    return best_len <= lookahead ? best_len : lookahead;
  };

  std::vector<Symbol> out;
  while (lookahead > 0) {
    unsigned hash_head = 0;
    if (lookahead >= static_cast<unsigned>(min_match)) hash_head = insert(strstart);
    prev_length = match_length;
    prev_match = match_start;
    match_length = min_match - 1;
    if (hash_head != 0 && prev_length < static_cast<unsigned>(max_lazy) &&
        strstart - hash_head <= max_distance) {
      match_length = longest_match(hash_head);
      if (match_length <= 5 && match_length == static_cast<unsigned>(min_match) &&
          strstart - match_start > too_far) {
        match_length = min_match - 1;
      }
    }
    if (prev_length >= static_cast<unsigned>(min_match) && match_length <= prev_length) {
      const unsigned max_insert = strstart + lookahead - min_match;
      out.push_back({static_cast<int>(prev_length), strstart - 1 - prev_match});
      lookahead -= prev_length - 1;
      for (unsigned n = prev_length - 2; n != 0; --n) {
        if (++strstart <= max_insert) insert(strstart);
      }
      match_available = false;
      match_length = min_match - 1;
      ++strstart;
    } else if (match_available) {
      out.push_back({window[strstart - 1], 0});
      ++strstart;
      --lookahead;
    } else {
      match_available = true;
      ++strstart;
      --lookahead;
    }
  }
  if (match_available) out.push_back({window[strstart - 1], 0});
  return out;
}

// RFC 1951 3.2.5: length codes 257..285 and distance codes 0..29 with their extra bits.
struct Code {
  int code;
  int extra_bits;
  unsigned extra;
};

Code length_code(unsigned length) {
  static constexpr std::array<unsigned, 29> base{3,  4,  5,  6,  7,  8,  9,  10, 11,  13,
                                                 15, 17, 19, 23, 27, 31, 35, 43, 51,  59,
                                                 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static constexpr std::array<int, 29> extra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                             2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  int i = 28;
  while (base[static_cast<std::size_t>(i)] > length) --i;
  const auto u = static_cast<std::size_t>(i);
  return {257 + i, extra[u], length - base[u]};
}

Code distance_code(unsigned distance) {
  static constexpr std::array<unsigned, 30> base{
      1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
      193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
  int i = 29;
  while (base[static_cast<std::size_t>(i)] > distance) --i;
  const auto u = static_cast<std::size_t>(i);
  return {i, i < 4 ? 0 : i / 2 - 1, distance - base[u]};
}

// The fixed Huffman code of a literal/length symbol (RFC 1951 3.2.6): length and code.
std::pair<int, unsigned> fixed_literal(int symbol) {
  const auto s = static_cast<unsigned>(symbol);
  if (symbol < 144) return {8, 0x30 + s};
  if (symbol < 256) return {9, 0x190 + s - 144};
  if (symbol < 280) return {7, s - 256};
  return {8, 0xC0 + s - 280};
}

class BitWriter {
 public:
  // Values go least significant bit first.
  void bits(unsigned value, int count) {
    for (int i = 0; i < count; ++i) push((value >> i) & 1u);
  }
  // Huffman codes go most significant bit first.
  void code(unsigned value, int count) {
    for (int i = count - 1; i >= 0; --i) push((value >> i) & 1u);
  }
  void align() {
    while (used_ != 0) push(0);
  }
  void byte(unsigned char b) { out_ += static_cast<char>(b); }
  std::string take() {
    align();
    return std::move(out_);
  }

 private:
  void push(unsigned bit) {
    current_ |= bit << used_;
    if (++used_ == 8) {
      out_ += static_cast<char>(current_);
      current_ = 0;
      used_ = 0;
    }
  }
  std::string out_;
  unsigned current_ = 0;
  int used_ = 0;
};

// The bits zlib's dynamic-Huffman block would take (its opt_len), computed as zlib builds
// its trees, so the block choice is zlib's exactly: ties between equal counts go to the
// shallower subtree, lengths are limited and fixed up the way zlib does, and the header
// codes the code lengths with runs.
class DynamicCost {
 public:
  std::uint64_t bits(std::vector<std::uint64_t> literal_counts,
                     std::vector<std::uint64_t> distance_counts) {
    Tree literals = build(std::move(literal_counts), 15, 257, length_extra());
    Tree distances = build(std::move(distance_counts), 15, 0, distance_extra());
    std::vector<std::uint64_t> bl_counts(19, 0);
    scan(literals, bl_counts);
    scan(distances, bl_counts);
    Tree bl = build(std::move(bl_counts), 7, 16, {2, 3, 7});
    static constexpr std::array<int, 19> order{16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                               11, 4,  12, 3, 13, 2, 14, 1, 15};
    int max_index = 18;
    while (max_index >= 3 && bl.len[static_cast<std::size_t>(order[static_cast<std::size_t>(max_index)])] == 0) {
      --max_index;
    }
    return opt_len_ + 3 * static_cast<std::uint64_t>(max_index + 1) + 5 + 5 + 4;
  }

 private:
  struct Tree {
    std::vector<std::uint64_t> freq;
    std::vector<int> len, dad;
    int max_code = -1;
  };

  static std::vector<int> length_extra() {
    return {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  }
  static std::vector<int> distance_extra() {
    std::vector<int> e;
    for (int i = 0; i < 30; ++i) e.push_back(i < 4 ? 0 : i / 2 - 1);
    return e;
  }

  Tree build(std::vector<std::uint64_t> counts, int max_length, int extra_base,
             const std::vector<int>& extra) {
    const int elems = static_cast<int>(counts.size());
    Tree t;
    t.freq = std::move(counts);
    t.freq.resize(static_cast<std::size_t>(2 * elems + 1), 0);
    t.len.assign(t.freq.size(), 0);
    t.dad.assign(t.freq.size(), 0);
    std::vector<int> depth(t.freq.size(), 0);
    const int heap_size = 2 * elems + 1;
    std::vector<int> heap(static_cast<std::size_t>(heap_size) + 1, 0);
    int heap_len = 0, heap_max = heap_size;
    auto f = [&](int n) { return t.freq[static_cast<std::size_t>(n)]; };
    auto smaller = [&](int n, int m) {
      return f(n) < f(m) ||
             (f(n) == f(m) && depth[static_cast<std::size_t>(n)] <= depth[static_cast<std::size_t>(m)]);
    };
    auto h = [&](int i) -> int& { return heap[static_cast<std::size_t>(i)]; };
    auto down = [&](int k) {
      const int v = h(k);
      for (int j = k << 1; j <= heap_len; j <<= 1) {
        if (j < heap_len && smaller(h(j + 1), h(j))) ++j;
        if (smaller(v, h(j))) break;
        h(k) = h(j);
        k = j;
      }
      h(k) = v;
    };
    for (int n = 0; n < elems; ++n) {
      if (f(n) != 0) h(++heap_len) = t.max_code = n;
    }
    // A code has at least two entries: zlib adds dummies, which cost nothing.
    while (heap_len < 2) {
      const int node = h(++heap_len) = t.max_code < 2 ? ++t.max_code : 0;
      t.freq[static_cast<std::size_t>(node)] = 1;
      depth[static_cast<std::size_t>(node)] = 0;
      --opt_len_;
    }
    for (int n = heap_len / 2; n >= 1; --n) down(n);
    int node = elems;
    do {
      const int n = h(1);
      h(1) = h(heap_len--);
      down(1);
      const int m = h(1);
      h(--heap_max) = n;
      h(--heap_max) = m;
      t.freq[static_cast<std::size_t>(node)] = f(n) + f(m);
      depth[static_cast<std::size_t>(node)] =
          std::max(depth[static_cast<std::size_t>(n)], depth[static_cast<std::size_t>(m)]) + 1;
      t.dad[static_cast<std::size_t>(n)] = t.dad[static_cast<std::size_t>(m)] = node;
      h(1) = node++;
      down(1);
    } while (heap_len >= 2);
    h(--heap_max) = h(1);

    // Lengths from the root down; leaves past max_length are pushed back up as zlib does.
    std::vector<int> bl_count(16, 0);
    t.len[static_cast<std::size_t>(h(heap_max))] = 0;
    int overflow = 0;
    int i = heap_max + 1;
    for (; i < heap_size; ++i) {
      const int n = h(i);
      int bits = t.len[static_cast<std::size_t>(t.dad[static_cast<std::size_t>(n)])] + 1;
      if (bits > max_length) bits = max_length, ++overflow;
      t.len[static_cast<std::size_t>(n)] = bits;
      if (n > t.max_code) continue;
      ++bl_count[static_cast<std::size_t>(bits)];
      const int x = n >= extra_base ? extra[static_cast<std::size_t>(n - extra_base)] : 0;
      opt_len_ += f(n) * static_cast<std::uint64_t>(bits + x);
    }
    if (overflow == 0) return t;
    do {
      int bits = max_length - 1;
      while (bl_count[static_cast<std::size_t>(bits)] == 0) --bits;
      --bl_count[static_cast<std::size_t>(bits)];
      bl_count[static_cast<std::size_t>(bits + 1)] += 2;
      --bl_count[static_cast<std::size_t>(max_length)];
      overflow -= 2;
    } while (overflow > 0);
    i = heap_size;
    for (int bits = max_length; bits != 0; --bits) {
      for (int n = bl_count[static_cast<std::size_t>(bits)]; n != 0;) {
        const int m = h(--i);
        if (m > t.max_code) continue;
        int& len = t.len[static_cast<std::size_t>(m)];
        if (len != bits) {
          opt_len_ += static_cast<std::uint64_t>(bits - len) * f(m);
          len = bits;
        }
        --n;
      }
    }
    return t;
  }

  // How often each code-length code (0-15, 16 = repeat 3-6, 17 = 3-10 zeros, 18 = 11-138
  // zeros) is used to send this tree's lengths.
  static void scan(Tree& t, std::vector<std::uint64_t>& bl) {
    int prevlen = -1, nextlen = t.len[0], count = 0, max_count = 7, min_count = 4;
    if (nextlen == 0) max_count = 138, min_count = 3;
    t.len[static_cast<std::size_t>(t.max_code + 1)] = 0xffff;
    for (int n = 0; n <= t.max_code; ++n) {
      const int curlen = nextlen;
      nextlen = t.len[static_cast<std::size_t>(n + 1)];
      if (++count < max_count && curlen == nextlen) continue;
      if (count < min_count) {
        bl[static_cast<std::size_t>(curlen)] += static_cast<std::uint64_t>(count);
      } else if (curlen != 0) {
        if (curlen != prevlen) ++bl[static_cast<std::size_t>(curlen)];
        ++bl[16];
      } else if (count <= 10) {
        ++bl[17];
      } else {
        ++bl[18];
      }
      count = 0;
      prevlen = curlen;
      if (nextlen == 0) {
        max_count = 138, min_count = 3;
      } else if (curlen == nextlen) {
        max_count = 6, min_count = 3;
      } else {
        max_count = 7, min_count = 4;
      }
    }
  }

  // Signed on purpose in zlib (dummies subtract first); never negative at the end.
  std::uint64_t opt_len_ = 0;
};

// numba-cuda 0.30.4's CUDAFlags options, in declaration order, with the text of their
// defaults: the dictionary numba compresses flag summaries against. numba names the
// dictionary's class part after the metaclass (cls.__class__ of a classmethod).
constexpr const char* parallel_default =
    "ParallelOptions(enabled=False, comprehension=False, reduction=False, "
    "inplace_binop=False, setitem=False, numpy=False, stencil=False, fusion=False, "
    "prange=False)";

std::string make_numba_flags_dictionary() {
  const std::pair<const char*, const char*> options[] = {
      {"enable_looplift", "False"},      {"enable_pyobject", "False"},
      {"enable_pyobject_looplift", "False"}, {"enable_ssa", "True"},
      {"force_pyobject", "False"},       {"release_gil", "False"},
      {"no_compile", "False"},           {"debuginfo", "False"},
      {"boundscheck", "False"},          {"forceinline", "False"},
      {"no_cpython_wrapper", "False"},   {"no_cfunc_wrapper", "False"},
      {"auto_parallel", parallel_default}, {"nrt", "False"},
      {"no_rewrites", "False"},          {"error_model", "python"},
      {"fastmath", "FastMathOptions(set())"}, {"noalias", "False"},
      {"inline", "InlineOptions('never')"}, {"dbg_extend_lifetimes", "False"},
      {"dbg_optnone", "False"},          {"dbg_directives_only", "False"},
      {"nvvm_options", "None"},          {"compute_capability", "None"},
      {"max_registers", "None"},         {"lto", "False"},
  };
  std::string out = "numba_MetaTargetConfigTrueFalse";
  for (const auto& [name, value] : options) out += std::string(name) + value;
  return out;
}

}  // namespace

const std::string& numba_flags_dictionary() {
  static const std::string dictionary = make_numba_flags_dictionary();
  return dictionary;
}

std::optional<std::string> deflate_like_zlib_level9(std::string_view dictionary,
                                                    std::string_view data) {
  if (dictionary.size() + data.size() > max_deflate_window) return std::nullopt;
  // zlib zeroes the bytes after the data that a match comparison may read.
  std::vector<unsigned char> window(dictionary.begin(), dictionary.end());
  window.insert(window.end(), data.begin(), data.end());
  const auto start = static_cast<unsigned>(dictionary.size());
  const auto end = static_cast<unsigned>(window.size());
  window.resize(window.size() + max_match + min_match, 0);
  const std::vector<Symbol> symbols = lz77(window, start, end);

  // zlib's block choice: fixed if no dynamic block is smaller, stored if smaller still.
  std::uint64_t fixed_bits = 7;  // end of block
  std::vector<std::uint64_t> literal_counts(286, 0), distance_counts(30, 0);
  literal_counts[256] = 1;
  for (const Symbol& s : symbols) {
    if (s.distance == 0) {
      fixed_bits += static_cast<std::uint64_t>(fixed_literal(s.literal_or_length).first);
      ++literal_counts[static_cast<std::size_t>(s.literal_or_length)];
      continue;
    }
    const Code l = length_code(static_cast<unsigned>(s.literal_or_length));
    const Code d = distance_code(s.distance);
    fixed_bits += static_cast<std::uint64_t>(fixed_literal(l.code).first + l.extra_bits + 5 +
                                             d.extra_bits);
    ++literal_counts[static_cast<std::size_t>(l.code)];
    ++distance_counts[static_cast<std::size_t>(d.code)];
  }
  const std::uint64_t dynamic_bits =
      DynamicCost().bits(std::move(literal_counts), std::move(distance_counts));
  const std::uint64_t fixed_bytes = (fixed_bits + 3 + 7) >> 3;
  // zlib would write a dynamic block, which this encoder does not: no guess.
  if (fixed_bytes > ((dynamic_bits + 3 + 7) >> 3)) return std::nullopt;

  BitWriter out;
  if (data.size() + 4 <= fixed_bytes) {
    out.bits(1, 3);  // final, stored
    out.align();
    const auto n = static_cast<unsigned>(data.size());
    for (unsigned v : {n & 0xFFu, n >> 8, ~n & 0xFFu, (~n >> 8) & 0xFFu}) {
      out.byte(static_cast<unsigned char>(v));
    }
    for (char c : data) out.byte(static_cast<unsigned char>(c));
    return out.take();
  }
  out.bits(3, 3);  // final, fixed Huffman
  for (const Symbol& s : symbols) {
    if (s.distance == 0) {
      const auto [bits, code] = fixed_literal(s.literal_or_length);
      out.code(code, bits);
      continue;
    }
    const Code l = length_code(static_cast<unsigned>(s.literal_or_length));
    const auto [bits, code] = fixed_literal(l.code);
    out.code(code, bits);
    out.bits(l.extra, l.extra_bits);
    const Code d = distance_code(s.distance);
    out.code(static_cast<unsigned>(d.code), 5);
    out.bits(d.extra, d.extra_bits);
  }
  const auto [bits, code] = fixed_literal(256);
  out.code(code, bits);
  return out.take();
}

std::string base64(std::string_view bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest) {
    const unsigned v = (at(i) << 16) | (rest == 2 ? at(i + 1) << 8 : 0u);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace cujit::abi::detail
