#include "ref_transpose.hpp"

#include <cstring>

namespace selgraph {
namespace impl {

namespace {

template <typename T>
void tr(const transpose_call_args &a) {
    const char *s = static_cast<const char *>(a.src);
    char *d = static_cast<char *>(a.dst);
    for (uint64_t r = 0; r < a.rows; ++r)
        for (uint64_t c = 0; c < a.cols; ++c) {
            T v;
            std::memcpy(&v,
                        s + static_cast<int64_t>(c) * a.src_ld + r * sizeof(T),
                        sizeof(T));
            std::memcpy(d + static_cast<int64_t>(r) * a.dst_ld + c * sizeof(T),
                        &v, sizeof(T));
        }
}

} // namespace

void ref_transpose(const transpose_call_args &a, int elem_size) {
    switch (elem_size) {
        case 1: tr<uint8_t>(a); break;
        case 2: tr<uint16_t>(a); break;
        case 4: tr<uint32_t>(a); break;
        default: tr<uint64_t>(a); break;
    }
}

} // namespace impl
} // namespace selgraph
