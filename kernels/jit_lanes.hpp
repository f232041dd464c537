// In-lane transposes of 2-byte elements, shared by the generators of the
// kernels that write a transposed dst (jit_select_dt.cpp: AVX2's blocks of
// 2-byte elements; jit_select_dt_packed.cpp: the packed kernels' quads).
// Each works within every 16-byte lane of its registers, xmm to zmm alike.
#ifndef SELGRAPH_KERNELS_JIT_LANES_HPP
#define SELGRAPH_KERNELS_JIT_LANES_HPP

#include <xbyak/xbyak.h>

namespace selgraph {
namespace impl {

/// The first two stages of transpose_words_in_lanes over `quads` (1 or 2)
/// groups of 4 registers r[4g .. 4g + 3], through t[4g .. 4g + 3]: words,
/// then dwords interleaved, after which each 16-byte lane of r[4g + m]
/// holds word 2m of the group's 4 registers, then word 2m + 1 (a quadword
/// per word position).
template <typename Vmm>
void words_then_dwords_in_lanes(Xbyak::CodeGenerator &g, const Vmm (&r)[8],
                                const Vmm (&t)[8], int quads) {
    for (int i = 0; i < 2 * quads; ++i) {
        g.vpunpcklwd(t[2 * i], r[2 * i], r[2 * i + 1]);
        g.vpunpckhwd(t[2 * i + 1], r[2 * i], r[2 * i + 1]);
    }
    for (int q = 0; q < quads; ++q)
        for (int i = 0; i < 2; ++i) {
            g.vpunpckldq(r[4 * q + 2 * i], t[4 * q + i], t[4 * q + 2 + i]);
            g.vpunpckhdq(r[4 * q + 2 * i + 1], t[4 * q + i], t[4 * q + 2 + i]);
        }
}

/// An 8 x 8 transpose of words within each 16-byte lane of r[0..7] into
/// t[0..7] (word k of a lane of r[i] becomes word i of that lane of t[k];
/// r is overwritten): words, then dwords, then quadwords, 24 shuffles. Its
/// own inverse: the packed kernels of 2-byte elements move a pixel's quads
/// of 4 channels through it in both directions; AVX2's blocks turn 8 rows
/// of 16 columns into, in t[k], column 8 l + k of the 8 rows in lane l.
template <typename Vmm>
void transpose_words_in_lanes(Xbyak::CodeGenerator &g, const Vmm (&r)[8],
                              const Vmm (&t)[8]) {
    words_then_dwords_in_lanes(g, r, t, 2);
    for (int i = 0; i < 4; ++i) {
        g.vpunpcklqdq(t[2 * i], r[i], r[4 + i]);
        g.vpunpckhqdq(t[2 * i + 1], r[i], r[4 + i]);
    }
}

} // namespace impl
} // namespace selgraph

#endif
