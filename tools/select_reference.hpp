// An independent reference for Select, for selgraph_benchdnn and the fuzz
// targets: a plain N-d loop over dst's multi-index that places each input on
// dst (numpy and none right-align, pdpd places src_1 and cond at an axis) and
// copies one element's bytes. It shares no code with the library's kernels.
#ifndef SELGRAPH_TOOLS_SELECT_REFERENCE_HPP
#define SELGRAPH_TOOLS_SELECT_REFERENCE_HPP

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace selgraph_tools {

using dims = std::vector<int64_t>;

struct ref_operand {
    dims shape;     // as given
    dims strides;   // in elements, as given
    int offset = 0; // dst dim of the operand's dim 0
};

// Where an operand lies on dst under a broadcast mode; -1 when it cannot.
inline int ref_offset(const std::string &mode, int64_t axis, bool is_src_0,
                      const dims &shape, int dst_ndims) {
    // OpenVINO's pdpd: axis -1 means rank(src_0) - rank(operand); trailing
    // 1s of the operand are then ignored, which the loop below does by
    // skipping dims of 1 and dims past dst's last.
    const int n = static_cast<int>(shape.size());
    if (mode != "pdpd" || is_src_0 || axis < 0)
        return dst_ndims - n;
    return static_cast<int>(axis);
}

// dst = cond ? src_0 : src_1, elements of `elem` bytes, cond one byte
// (non-zero = true). `out` gets dst in dst_strides.
inline void ref_select(const dims &dst_shape, const dims &dst_strides,
                       const ref_operand op[3], const void *const in[3],
                       size_t elem, void *out) {
    const int nd = static_cast<int>(dst_shape.size());
    int64_t total = 1;
    for (int64_t d : dst_shape)
        total *= d;
    if (total == 0)
        return;
    std::vector<int64_t> idx(nd, 0);
    for (int64_t n = 0; n < total; ++n) {
        int64_t off[3] = { 0, 0, 0 };
        for (int p = 0; p < 3; ++p)
            for (size_t j = 0; j < op[p].shape.size(); ++j) {
                const int i = static_cast<int>(j) + op[p].offset;
                if (i < 0 || i >= nd || op[p].shape[j] == 1)
                    continue;
                off[p] += idx[i] * op[p].strides[j];
            }
        int64_t doff = 0;
        for (int i = 0; i < nd; ++i)
            doff += idx[i] * dst_strides[i];
        const bool c = static_cast<const uint8_t *>(in[0])[off[0]] != 0;
        const int p = c ? 1 : 2;
        std::memcpy(static_cast<char *>(out) + doff * elem,
                    static_cast<const char *>(in[p]) + off[p] * elem, elem);
        for (int i = nd - 1; i >= 0; --i) {
            if (++idx[i] < dst_shape[i])
                break;
            idx[i] = 0;
        }
    }
}

} // namespace selgraph_tools

#endif
