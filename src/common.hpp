// Helpers shared by the graph layer: error construction, names of types and
// shapes for messages, overflow-checked size arithmetic, comma lists.
#ifndef SELGRAPH_SRC_COMMON_HPP
#define SELGRAPH_SRC_COMMON_HPP

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "selgraph/selgraph.hpp"

namespace selgraph {
namespace impl {

using dim = logical_tensor::dim;
using dims = logical_tensor::dims;
using data_type = logical_tensor::data_type;
using layout_type = logical_tensor::layout_type;

template <typename... Args>
[[noreturn]] void fail(status s, const Args &...args) {
    std::ostringstream os;
    (os << ... << args);
    throw error(s, os.str());
}

const char *dtype2str(data_type dt);
/// The inverse of dtype2str (the names of oneDNN's JSON graphs): false for
/// a name no type has.
bool str2dtype(const std::string &name, data_type &dt);
const char *layout2str(layout_type lt);
std::string dims2str(const dims &d);
std::string dims2str(const dim *d, int n);

/// Bytes per element; 0 for types without a byte size (undef, s4, u4).
size_t dtype_size(data_type dt);

/// The items of a comma-separated list, as written (empty items kept);
/// none for an empty string. For the environment variables that take
/// lists (SELGRAPH_GRAPH_DUMP, SELGRAPH_CPU_TUNING).
std::vector<std::string> comma_items(const std::string &s);

/// A dim or stride that means "unknown": unknown_dim or -1.
inline bool is_unknown_dim(dim d) {
    return d == logical_tensor::unknown_dim || d == -1;
}

/// a * b and a + b on non-negative values; false on overflow of int64.
bool mul_ok(int64_t a, int64_t b, int64_t &r);
bool add_ok(int64_t a, int64_t b, int64_t &r);

/// The least s with 2^s >= v (log2 of a power of two), v >= 1.
inline int ilog2(int v) {
    int s = 0;
    while ((1 << s) < v)
        ++s;
    return s;
}

} // namespace impl
} // namespace selgraph

#endif
