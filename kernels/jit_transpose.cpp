// Xbyak generator of the transpose kernels (ABI: jit_transpose.hpp), one
// template for AVX-512 (zmm, opmasks) and AVX2 (ymm).
//
// Register tile: kc lines (columns c0 .. c0 + kc - 1) of one vector each
// (rows r0 .. r0 + tr - 1, tr = vector bytes / w) are loaded, then each
// 16-byte lane is transposed on its own: the lines form groups of nl lines
// (nl * w = 16 bytes, 8 for AVX2 bytes), and log2(nl) stages of in-lane
// unpacks (vpunpck{l,h}{bw,wd,dq,qdq}, at w, 2w, 4w, ... bytes) turn the nl
// lines of a group into pieces of nl * w bytes, each piece one row r and
// the nl columns of the group. Every piece is stored to its dst row (xmm
// store, vextracti* to memory, or vmovq / vmovhps for 8-byte pieces).
//   AVX-512: kc = 16 lines, tr = 64 / w rows (w = 4: 16 x 16 elements, 1 KiB
//            per tile; w = 1: 16 columns x 64 rows).
//   AVX2:    kc = 8 lines, tr = 32 / w rows.
// The generator follows every element through the unpack network at
// generation time, so where each piece ends up is computed, not assumed;
// a network that does not yield whole rows throws.
//
// Wide register tiles (the regular variant; 1-, 2- and 4-byte elements):
// 16 / w rows of n_lanes * nl columns, where each register is built from
// one 16-byte piece of each of n_lanes lines nl columns apart (a load,
// then vinserti32x4 / vinserti128 from memory), so that the same in-lane
// network leaves whole rows: whole-vector stores in place of one 16-byte
// piece per row and group, most of them extracted. AVX2 bytes (groups of
// 8 lines, half a lane) leave two rows of 8 columns in each lane; a
// vpermq makes each lane one row of 16 columns, stored as an xmm: 16-byte
// stores in place of the register tile's 8-byte vmovq / vmovhps, which
// cost 1.3x the time on an Intel Xeon (docs/performance.md). A line's 64 bytes
// are read over the tr / nl wide tiles of a step, so wide tiles run only where
// the lines of one stay in L1: where they lie within 16 KiB (a channels-last
// source), or, for a source in the caches (transpose_call_args::src_cached:
// the scratch), where src_ld does not put them into one or two L1 sets; not
// for the columns of a [2048, 2048] matrix in memory, nor for streamed
// tiles (wide_lines). The rest of a call runs the register tiles above. On
// AVX-512 a wide tile's rows are whole 64-byte lines, which the
// non-temporal variant streams as they are. Measured in
// docs/performance.md.
//
// Prefetch: each full register tile also prefetches (into L2, prefetcht2)
// its lines' counterparts pf_ahead columns later, the lines the kernel loads
// about two column blocks later (the next tile's columns at the end of this
// one), as long as those columns are below pf_cols. A tile reads short runs
// of lines that the hardware prefetchers do not follow far enough, and
// prefetches spread one per load keep the misses in flight without a burst.
// Into L2 rather than L1 measured faster on the layouts that read from DRAM
// (docs/performance.md); presumably an L2 prefetch does not hold one of the
// core's few L1 miss buffers for a whole DRAM round trip.
//
// Prefetch in address order (pf_next, pf_next_bytes): where the caller
// knows the next tile's source as one contiguous block, the kernel spreads
// its lines over the full register tiles of this call (pf_step lines per
// tile, computed in the preamble from rows, cols and the tile geometry),
// prefetching into L2 in address order, a pattern DRAM serves far better
// than the tiles' short runs (docs/performance.md, layouts).
//
// Non-temporal variant (key.nt_stores): a dst row piece of one register
// tile is 16 bytes or less, and streaming stores of parts of a line leave
// it to the write-combining buffers, which flush half-filled lines. So
// where dst and dst_ld are multiples of 64 bytes, the kernel walks column
// blocks of sb = max(kc, 64 / w) columns (64 bytes of a dst row, or one
// register tile where that is wider): on AVX-512, wide tiles where their
// lines suit them (above), whose rows are those 64 bytes, streamed
// straight from the register; otherwise the sb / kc register tiles of a
// block of rows store their pieces into a staging block on the stack (tr
// rows of sb * w bytes, in L1), and each staged row goes to dst with
// whole-vector non-temporal stores, full lines only. AVX2 runs blocks of
// 4 * sb columns first where dst_ld is a multiple of 256 bytes (sb4_). Rows
// past the last full block, columns past the last full column block, and a dst
// that is not aligned so run as in the regular kernel; an sfence ends the call
// unless the caller fences itself (`fence` = 0). With a carry
// (transpose_call_args::carry; AVX-512 2- to 8-byte elements, and 1-byte
// ones on a CPU with AVX512_VBMI; AVX2 every size, which AVX-512 plans use
// for 1-byte elements but on Zen 4 and 5, and on Zen 4 and 5 for dst lines
// a multiple of 256 bytes apart: transpose_kernel_isa, src/dispatch.hpp) a dst
// that is not aligned so streams whole lines too: blocks of 2 * sb columns
// (AVX2: 4 lines of a row where they are at most 64 columns; bytes one line),
// each row's piece joined to the previous block's tail (carried_block; the join
// is vpermi2b / vpermi2w / vpermi2d on AVX-512, vpermd and vpblendvb, plus
// shifts for 1- and 2-byte elements, on AVX2: carry_rows_avx2). A band of
// rows is carried only in its whole register tiles (transpose_tile_rows):
// the caller keeps each row in a whole tile in every call or in none.

//
// Packed calls (both variants, every element size): a call of a few lines
// whose block is contiguous on one side, 2 .. P rows with the source lines
// back to back (src_ld = rows * w: a channels-last block of 3 channels
// read into an NCHW dst) or 2 .. P columns with the dst rows back to back
// (dst_ld = cols * w), P = transpose_key::packed_lines (at most 8, and
// fewer than a register tile holds; the dispatcher picks it per CPU). Register
// tiles would move R of their 16 (or 64 / w) lines. Instead R vectors of the
// contiguous side hold V = vlen / w columns (rows) of all R lines, and each of
// the R vectors of the other side is a permutation of them fixed at generation
// time: vpermi2{w,d} over two source registers at a time, merged under masks
// (AVX-512, 2 to 8 bytes), vpermd and vpblendd (AVX2, 4 and 8 bytes), or
// passes of vpermd then a zeroing vpshufb, or-ed together (1-byte
// elements, and 2-byte ones on AVX2; VBMI is not assumed). Rows taken
// apart in those byte cases first regroup the source's 16-byte lanes so
// that each lane of R vectors holds what one output lane needs, then OR
// R in-lane vpshufb per output (regrouped_rows). The index and mask
// constants follow the code. The rest of a call (fewer than V) runs
// as one more block over the call's last V, which stores again what it
// overlaps, or, in a call of fewer than V, through two blocks on the
// stack (rep movsb in and out). The non-temporal variant stores whole vectors
// non-temporally where every one is aligned. Measured against the register
// tiles in docs/performance.md (packed transposes).
//
// Tails: AVX-512 runs partial tiles with byte opmasks (loads masked to the
// rows that exist, lines past the last column not loaded, stores masked to
// the columns that exist, rows past the last not stored). AVX2 runs the
// rows past the last full tile as one full tile over the last tr rows, and
// the columns past the last full block as one more block over the last kc
// columns, storing the overlapped elements again with the same values
// (the tails of [197, 197] ran 1.2-1.4x the time of [192, 192] per element
// with scalar moves); only a call of fewer than tr rows or kc columns
// moves those with scalar moves.
#include "jit_transpose.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include <xbyak/xbyak.h>

#include "jit_generator.hpp"
#include "src/common.hpp"
#include "src/cpu_isa.hpp"

namespace selgraph {
namespace impl {

std::string transpose_kernel_name(const transpose_key &k) {
    return std::string(kernel_isa2str(k.isa)) + "_tr_e"
           + std::to_string(k.elem_size) + (k.nt_stores ? "_nt" : "");
}

namespace {

using namespace Xbyak;

// Where the regular variant runs wide register tiles (kernel comment
// above): pieces of 16 bytes (nl * w), at most 16 registers for the
// network, and a wide tile a whole number of regular ones.
bool wide_tiles(kernel_isa isa, int w) {
    if (isa == kernel_isa::avx512_core)
        return w == 1 || w == 2 || w == 4;
    return w == 1 || w == 2 || w == 4;
}

template <kernel_isa isa, typename Vmm>
class jit_transpose_t : public jit_generator<transpose_kernel> {
public:
    explicit jit_transpose_t(const transpose_key &key)
        : jit_generator(key, 16384)
        , w_(key.elem_size)
        , lw_(ilog2(key.elem_size))
        , tr_(transpose_tile_rows(key))
        , nl_(is_avx512 || key.elem_size > 1 ? 16 / key.elem_size : 8)
        , piece_(nl_ * key.elem_size)
        , kc_(is_avx512 ? 16 : 8)
        , groups_(kc_ / nl_)
        , nt_(key.nt_stores != 0)
        , sb_(std::max(kc_, 64 / key.elem_size))
        , kcw_(n_lanes * nl_)
        , wide_(wide_tiles(isa, key.elem_size) && (!nt_ || is_avx512))
        , pk_rows_(std::min({ int(key.packed_lines), packed_max, tr_ - 1 }))
        , pk_cols_(transpose_packed_cols(key))
        , carry_ok_(nt_
                    && (key.elem_size >= 2 || !is_avx512
                        || cpu_has_avx512_vbmi()))
        , g_(std::min<int>(key.elem_size, 4))
        , vbmi_(is_avx512 && cpu_has_avx512_vbmi()) {
        plan_network();
        if (wide_ || short_)
            plan_wide();
        generate();
        ready();
    }

private:
    static constexpr bool is_avx512 = isa == kernel_isa::avx512_core;
    static constexpr int vlen = is_avx512 ? 64 : 32;
    static constexpr int lane_bytes = 16;
    static constexpr int n_lanes = vlen / lane_bytes;

    // General registers (rbx, rbp, r12 .. r15 saved in the preamble).
    const Reg64 reg_param_ = rdi;
    const Reg64 reg_ld_ = rbx;                      // src_ld
    const Reg64 reg_ld3_ = rdx;                     // 3 * src_ld
    const Reg64 reg_dld_ = rsi;                     // dst_ld
    const Reg64 reg_dld3_ = r8;                     // 3 * dst_ld
    const Reg64 reg_sblk_ = r9;                     // src + c0 * src_ld
    const Reg64 reg_dblk_ = r10;                    // dst + c0 * w
    const Reg64 reg_r0_ = r11;                      // first row of the tile
    const Reg64 reg_p_[4] = { r12, r13, r14, r15 }; // lines 0, 4, 8, 12
    const Reg64 reg_q_ = rbp;                       // dst row pointer
    const Reg64 reg_tmp_ = rax;
    const Reg64 reg_tmp2_ = rcx;
    // Stack slots: c0, rows left in the tile, columns left in the tile,
    // pf_ahead * src_ld, the prefetch offset of this column block (0:
    // none), and the staging block's address (non-temporal variant); the
    // staging block (stage_bytes()) follows, 64-byte aligned.
    static constexpr int stk_c0 = 0, stk_rows = 8, stk_cols = 16;
    static constexpr int stk_pf_dist = 24, stk_pf = 32, stk_stage = 40;
    // The linear prefetch: next line, end, lines per full register tile.
    static constexpr int stk_nx = 48, stk_nx_end = 56, stk_nx_step = 64;
    static constexpr int stk_slots = 72;
    static constexpr int stage_max = 64 * 64;
    static constexpr int pf_ahead = transpose_prefetch_cols; // columns
    // Wide tiles' lines that span at most this many bytes stay in L1
    // whatever their stride (half a 32 KiB L1); lines further apart do
    // where they spread over its sets (wide_lines).
    static constexpr int wide_span = 16 * 1024;
    // The most lines of a packed call (transpose_key::packed_lines).
    static constexpr int packed_max = 8;
    const Opmask k_rows_ = k1;
    const Opmask k_cols_ = k2;

    // One stored piece: vector register, 16-byte lane, piece in the lane;
    // it holds row `row` of the tile, columns group * nl_ .. + nl_ - 1.
    struct piece {
        int reg, lane, idx, row, group;
    };

    // --- the unpack network, followed element by element ---------------
    struct label {
        int line, row;
    };
    using content = std::vector<label>;
    struct unpack_op {
        int dst_lo, dst_hi, a, b, gran; // gran: bytes
    };

    // The in-lane unpack network over groups of nl_ registers (vals: each
    // group's registers in order; free_reg: a register no group holds),
    // appended to `ops`, following every element's label through it.
    void simulate(std::vector<content> &regs,
                  std::vector<std::vector<int>> &vals, int free_reg,
                  std::vector<unpack_op> &ops) const {
        const int elems = vlen / w_, lane_elems = lane_bytes / w_;
        for (int s = 0; (1 << s) < nl_; ++s) {
            const int k = 1 << s; // elements per chunk
            for (auto &group : vals) {
                std::vector<int> next(static_cast<size_t>(nl_));
                for (int i = 0; i < nl_ / 2; ++i) {
                    const int a = group[2 * i], b = group[2 * i + 1];
                    content lo(elems), hi(elems);
                    const int chunks = lane_elems / k;
                    for (int ln = 0; ln < n_lanes; ++ln)
                        for (int j = 0; j < chunks / 2; ++j)
                            for (int e = 0; e < k; ++e) {
                                const int base = ln * lane_elems;
                                const int o0 = base + (2 * j) * k + e;
                                const int o1 = base + (2 * j + 1) * k + e;
                                const int il = base + j * k + e;
                                const int ih = base + (chunks / 2 + j) * k + e;
                                lo[o0] = regs[a][il];
                                lo[o1] = regs[b][il];
                                hi[o0] = regs[a][ih];
                                hi[o1] = regs[b][ih];
                            }
                    ops.push_back({ free_reg, b, a, b, k * w_ });
                    regs[free_reg] = lo;
                    regs[b] = hi;
                    next[i] = free_reg;
                    next[i + nl_ / 2] = b;
                    free_reg = a;
                }
                group = next;
            }
        }
    }

    // Registers 0 .. n - 1 labelled element by element (label(reg, e)),
    // the rest empty, for simulate().
    template <typename Label_of>
    std::vector<content> labelled(int n, Label_of label_of) const {
        const int elems = vlen / w_;
        std::vector<content> regs(32);
        for (int r = 0; r < n; ++r)
            for (int e = 0; e < elems; ++e)
                regs[r].push_back(label_of(r, e));
        return regs;
    }

    void plan_network() {
        const int lane_elems = lane_bytes / w_;
        std::vector<content> regs = labelled(kc_, [](int l, int e) {
            return label { l, e };
        });
        std::vector<std::vector<int>> vals(groups_);
        for (int g = 0; g < groups_; ++g)
            for (int i = 0; i < nl_; ++i)
                vals[g].push_back(g * nl_ + i);
        simulate(regs, vals, kc_, ops_);
        // Read off the pieces; each (row, group) must appear exactly once.
        std::vector<int> seen(static_cast<size_t>(tr_ * groups_), 0);
        for (int g = 0; g < groups_; ++g)
            for (int reg : vals[g])
                for (int ln = 0; ln < n_lanes; ++ln)
                    for (int p = 0; p < lane_bytes / piece_; ++p) {
                        const int e0 = ln * lane_elems + p * nl_;
                        const int row = regs[reg][e0].row;
                        for (int i = 0; i < nl_; ++i) {
                            const label &x = regs[reg][e0 + i];
                            if (x.row != row || x.line != g * nl_ + i)
                                throw Error(ERR_INTERNAL);
                        }
                        ++seen[static_cast<size_t>(row * groups_ + g)];
                        pieces_.push_back({ reg, ln, p, row, g });
                    }
        for (int s : seen)
            if (s != 1)
                throw Error(ERR_INTERNAL);
        std::stable_sort(
                pieces_.begin(), pieces_.end(),
                [](const piece &x, const piece &y) { return x.row < y.row; });
        // AVX2 16-byte pieces (4- and 8-byte elements): a row's groups
        // 2k and 2k + 1 lie side by side, stored as one vector.
        pair_pieces_ = !is_avx512 && piece_ == lane_bytes && groups_ % 2 == 0;
        for (size_t i = 0; pair_pieces_ && i < pieces_.size(); i += 2)
            if (pieces_[i + 1].row != pieces_[i].row
                || pieces_[i].group % 2 != 0
                || pieces_[i + 1].group != pieces_[i].group + 1
                || pieces_[i].reg > kc_ || pieces_[i + 1].reg > kc_)
                throw Error(ERR_INTERNAL);
        for (const unpack_op &op : ops_) // kc_ + 1 stays free for a pair
            if (std::max({ op.dst_lo, op.dst_hi, op.a, op.b }) > kc_)
                throw Error(ERR_INTERNAL);
        // AVX2 8-byte pieces: the upper lanes go to spare registers.
        if (piece_ < lane_bytes) {
            std::vector<bool> used(16, false);
            for (int g = 0; g < groups_; ++g)
                for (int reg : vals[g])
                    used[static_cast<size_t>(reg)] = true;
            for (int g = 0; g < groups_; ++g)
                for (int reg : vals[g]) {
                    int spare = 0;
                    while (used[static_cast<size_t>(spare)])
                        ++spare;
                    used[static_cast<size_t>(spare)] = true;
                    upper_.push_back({ reg, spare });
                }
        }
    }

    // Wide register tiles: register k holds, in lane L, the 16 bytes at
    // rows r0 .. r0 + 16 / w - 1 of line nl_ * L + k; the same in-lane
    // network then leaves nl_ registers, each one row of all kcw_ columns
    // in order (wrow_: the register and lane of each row). AVX2 bytes
    // (nl_ = 8 lines to a group, half a lane): each lane then holds two
    // rows of its 8 lines, and a vpermq (qwords 0, 2, 1, 3) makes each
    // lane one row of all 16 columns (wide_perm_), two rows a register.
    void plan_wide() {
        const int elems = vlen / w_, lane_elems = lane_bytes / w_;
        std::vector<content> regs = labelled(nl_, [&](int k, int e) {
            return label { nl_ * (e / lane_elems) + k, e % lane_elems };
        });
        std::vector<std::vector<int>> vals(1);
        for (int k = 0; k < nl_; ++k)
            vals[0].push_back(k);
        simulate(regs, vals, nl_, wops_);
        const int per_reg = elems / kcw_; // rows a register holds
        if (per_reg == 2) {
            const int q = 8 / w_; // elements per qword
            for (int reg : vals[0]) {
                content c = regs[reg];
                for (int e = 0; e < elems; ++e) {
                    static constexpr int from[4] = { 0, 2, 1, 3 };
                    c[e] = regs[reg][from[e / q] * q + e % q];
                }
                regs[reg] = c;
            }
        }
        wrow_.assign(static_cast<size_t>(lane_elems), { -1, 0 });
        for (int reg : vals[0])
            for (int h = 0; h < per_reg; ++h) {
                const int row = regs[reg][h * kcw_].row;
                for (int e = 0; e < kcw_; ++e)
                    if (regs[reg][h * kcw_ + e].row != row
                        || regs[reg][h * kcw_ + e].line != e)
                        throw Error(ERR_INTERNAL);
                if (wrow_[static_cast<size_t>(row)].first != -1)
                    throw Error(ERR_INTERNAL);
                wrow_[static_cast<size_t>(row)] = { reg, h };
            }
        wide_perm_ = per_reg == 2;
        wide_out_ = vals[0];
    }

    // --- code ------------------------------------------------------------
    // Line q (0 .. 3) on from `base`, disp bytes on.
    Address line_at(const Reg64 &base, int q, int disp = 0) {
        switch (q) {
            case 0: return ptr[base + disp];
            case 1: return ptr[base + reg_ld_ + disp];
            case 2: return ptr[base + reg_ld_ * 2 + disp];
            default: return ptr[base + reg_ld3_ + disp];
        }
    }
    Address line_addr(int l) { return line_at(reg_p_[l / 4], l % 4); }
    // Row `row` of the tile at reg_q_ = dst row (row & ~3), group g.
    Address row_addr(int row, int g, int extra = 0) {
        const int off = g * piece_ + extra;
        switch (row % 4) {
            case 0: return ptr[reg_q_ + off];
            case 1: return ptr[reg_q_ + reg_dld_ + off];
            case 2: return ptr[reg_q_ + reg_dld_ * 2 + off];
            default: return ptr[reg_q_ + reg_dld3_ + off];
        }
    }

    void unpack(const Vmm &d, const Vmm &a, const Vmm &b, int gran, bool hi) {
        switch (gran) {
            case 1: hi ? vpunpckhbw(d, a, b) : vpunpcklbw(d, a, b); break;
            case 2: hi ? vpunpckhwd(d, a, b) : vpunpcklwd(d, a, b); break;
            case 4: hi ? vpunpckhdq(d, a, b) : vpunpckldq(d, a, b); break;
            default: hi ? vpunpckhqdq(d, a, b) : vpunpcklqdq(d, a, b); break;
        }
    }

    // Lines of the tile `sub` register tiles (of kc_ columns) on from
    // reg_sblk_.
    void tile_pointers(int sub = 0) {
        lea(reg_p_[0], ptr[reg_sblk_ + reg_r0_ * w_]);
        if (sub > 0) {
            imul(reg_tmp_, reg_ld_, sub * kc_);
            add(reg_p_[0], reg_tmp_);
        }
        for (int i = 1; i < kc_ / 4; ++i)
            lea(reg_p_[i], ptr[reg_p_[i - 1] + reg_ld_ * 4]);
    }
    void row_pointer() {
        mov(reg_q_, reg_r0_);
        imul(reg_q_, reg_dld_);
        add(reg_q_, reg_dblk_);
    }
    void network() {
        for (const unpack_op &op : ops_) {
            unpack(Vmm(op.dst_lo), Vmm(op.a), Vmm(op.b), op.gran, false);
            unpack(Vmm(op.dst_hi), Vmm(op.a), Vmm(op.b), op.gran, true);
        }
    }

    // Row `row` of the staging block (rows stage_row bytes apart), group
    // g of register tile `sub` (reg_q_ = the staging block).
    Address stage_addr(int row, int g, int sub, int stage_row) {
        return ptr[reg_q_ + row * stage_row + sub * kc_ * w_ + g * piece_];
    }

    // A full tile: kc_ lines of tr_ rows, stored to dst, or with `staged`
    // to the staging block (rows stage_row bytes apart, from stage_at
    // bytes on) as its register tile `sub`.
    void full_tile(bool staged = false, int sub = 0, int stage_row = 0,
                   int stage_at = 0) {
        tile_pointers(sub);
        for (int l = 0; l < kc_; ++l) {
            if constexpr (is_avx512)
                vmovdqu32(Zmm(l), line_addr(l));
            else
                vmovdqu(Ymm(l), line_addr(l));
        }
        next_prefetch();
        // The lines pf_ahead columns on (reg_p_ is set again by the next
        // tile).
        Label l_no_pf;
        mov(reg_tmp_, ptr[rsp + stk_pf]);
        test(reg_tmp_, reg_tmp_);
        jz(l_no_pf, T_NEAR);
        for (int i = 0; i < kc_ / 4; ++i)
            add(reg_p_[i], reg_tmp_);
        for (int l = 0; l < kc_; ++l)
            prefetcht2(line_addr(l));
        L(l_no_pf);
        network();
        if (staged) {
            mov(reg_q_, ptr[rsp + stk_stage]);
            if (stage_at)
                add(reg_q_, stage_at);
        } else
            row_pointer();
        for (const auto &u : upper_)
            vextracti128(Xmm(u.second), Ymm(u.first), 1);
        int quad = 0;
        for (size_t i = 0; i < pieces_.size();) {
            const piece &p = pieces_[i];
            for (; !staged && quad < p.row / 4; ++quad)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            i += store_pieces(
                    i, staged ? stage_addr(p.row, p.group, sub, stage_row)
                              : row_addr(p.row, p.group));
        }
    }

    // pieces_[i], and with pair_pieces_ the same row's next group beside
    // it, to `a`; returns how many pieces were stored. A pair is one
    // vperm2i128 and one 32-byte store where the two 16-byte pieces took
    // a store and an extract-and-store: on the Zen 3 guest the f32
    // transposes of [2048, 2048] src_0 stored transposed ran 1.17-1.22x
    // faster (the Select 1.09-1.18x), and a staging block's rows are
    // read back whole from one store (docs/performance.md).
    size_t store_pieces(size_t i, const Address &a) {
        const piece &p = pieces_[i];
        if (!pair_pieces_) {
            store_piece(p, a);
            return 1;
        }
        const piece &q = pieces_[i + 1];
        const Ymm pair(kc_ + 1); // past the network's registers
        vperm2i128(pair, Ymm(p.reg), Ymm(q.reg), p.lane | (2 + q.lane) << 4);
        vmovdqu(a, pair);
        return 2;
    }

    // One piece of a register tile to `a` (AVX2: the upper lanes already
    // extracted into upper_'s spare registers where pieces are 8 bytes).
    void store_piece(const piece &p, const Address &a) {
        if (piece_ == lane_bytes) {
            if (p.lane == 0) {
                if constexpr (is_avx512)
                    vmovdqu32(a, Xmm(p.reg));
                else
                    vmovdqu(a, Xmm(p.reg));
            } else {
                if constexpr (is_avx512)
                    vextracti32x4(a, Zmm(p.reg), p.lane);
                else
                    vextracti128(a, Ymm(p.reg), p.lane);
            }
        } else {
            int x = p.reg;
            if (p.lane == 1)
                for (const auto &u : upper_)
                    if (u.first == p.reg)
                        x = u.second;
            if (p.idx == 0)
                vmovq(a, Xmm(x));
            else
                vmovhps(a, Xmm(x));
        }
    }

    // This register tile's share of the linear prefetch: up to
    // [rsp + stk_nx_step] lines from [rsp + stk_nx], below its end.
    void next_prefetch() {
        Label l_loop, l_store, l_none;
        mov(reg_tmp_, ptr[rsp + stk_nx_step]);
        test(reg_tmp_, reg_tmp_);
        jz(l_none, T_NEAR);
        mov(reg_tmp2_, ptr[rsp + stk_nx]);
        L(l_loop);
        cmp(reg_tmp2_, ptr[rsp + stk_nx_end]);
        jae(l_store, T_NEAR);
        prefetcht2(ptr[reg_tmp2_]);
        add(reg_tmp2_, 64);
        dec(reg_tmp_);
        jnz(l_loop, T_NEAR);
        L(l_store);
        mov(ptr[rsp + stk_nx], reg_tmp2_);
        L(l_none);
    }

    // Preamble: the linear prefetch's start, end and lines per full
    // register tile, ceil(lines / full tiles) (0: none).
    void init_next_prefetch() {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        Label l_none;
        mov(qword[rsp + stk_nx_step], 0);
        mov(rax, arg(offsetof(transpose_call_args, pf_next_bytes)));
        test(rax, rax);
        jz(l_none, T_NEAR);
        mov(reg_tmp2_, arg(offsetof(transpose_call_args, pf_next)));
        mov(ptr[rsp + stk_nx], reg_tmp2_);
        add(reg_tmp2_, rax);
        mov(ptr[rsp + stk_nx_end], reg_tmp2_);
        // Full register tiles: (rows / tr_) * (cols / kc_), at least 1
        // (rdx is free: reg_ld3_ is set after this).
        mov(reg_tmp2_, arg(offsetof(transpose_call_args, rows)));
        shr(reg_tmp2_, ilog2(tr_));
        mov(rdx, arg(offsetof(transpose_call_args, cols)));
        shr(rdx, ilog2(kc_));
        imul(reg_tmp2_, rdx);
        prefetch_step();
        L(l_none);
    }

    // [rsp + stk_nx_step] = ceil(lines / blocks), the lines of rax bytes
    // spread over reg_tmp2_ blocks (0: 1); clobbers rdx.
    void prefetch_step() {
        Label l_set;
        test(reg_tmp2_, reg_tmp2_);
        jnz(l_set, T_NEAR);
        mov(reg_tmp2_, 1);
        L(l_set);
        add(rax, 63);
        shr(rax, 6);
        lea(rax, ptr[rax + reg_tmp2_ - 1]);
        xor_(edx, edx);
        div(reg_tmp2_);
        mov(ptr[rsp + stk_nx_step], rax);
    }

    // A block of tr_ rows by `width` columns through the staging block:
    // its width / kc_ register tiles, then each staged row to dst with
    // non-temporal vector stores (dst rows 64-byte aligned).
    void staged_block(int width) {
        for (int sub = 0; sub < width / kc_; ++sub)
            full_tile(true, sub, width * w_);
        mov(reg_tmp2_, ptr[rsp + stk_stage]);
        row_pointer();
        const int row_bytes = width * w_, nv = row_bytes / vlen;
        int v = 0;
        for (int row = 0; row < tr_; ++row) {
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            for (int j = 0; j < nv; ++j, ++v) {
                const Vmm t(v % 16);
                const Address src = ptr[reg_tmp2_ + row * row_bytes + j * vlen];
                const Address d = row_addr(row, 0, j * vlen);
                if constexpr (is_avx512) {
                    vmovdqa64(t, src);
                    vmovntdq(d, t);
                } else {
                    vmovdqa(t, src);
                    vmovntdq(d, t);
                }
            }
        }
    }

    // AVX-512: k = the bytes of the first reg_tmp2_ elements (reg_tmp2_
    // and reg_tmp_ clobbered).
    void elem_mask(const Opmask &k) {
        if (lw_)
            shl(reg_tmp2_, lw_);
        mov(reg_tmp_, -1);
        bzhi(reg_tmp_, reg_tmp_, reg_tmp2_);
        kmovq(k, reg_tmp_);
    }

    // A partial tile (AVX-512): [rsp + stk_rows] rows (1 .. tr_) and
    // [rsp + stk_cols] columns (1 .. kc_).
    void partial_tile() {
        tile_pointers();
        mov(reg_tmp2_, ptr[rsp + stk_rows]);
        elem_mask(k_rows_);
        Label l_loaded;
        for (int l = 0; l < kc_; ++l) {
            if (l > 0) {
                cmp(qword[rsp + stk_cols], l);
                jbe(l_loaded, T_NEAR);
            }
            vmovdqu8(Zmm(l) | k_rows_ | T_z, line_addr(l));
        }
        L(l_loaded);
        network();
        // Registers 0 .. kc_ hold the network; 31 is spare.
        const Xmm xt = Xmm(31);
        for (int g = 0; g < groups_; ++g) {
            Label l_group_done;
            // k_cols_ = bytes of the columns of group g that exist.
            mov(reg_tmp2_, ptr[rsp + stk_cols]);
            if (g > 0) {
                sub(reg_tmp2_, g * nl_);
                jle(l_group_done, T_NEAR);
            }
            mov(reg_tmp_, nl_);
            cmp(reg_tmp2_, reg_tmp_);
            cmova(reg_tmp2_, reg_tmp_);
            elem_mask(k_cols_);
            row_pointer();
            int quad = 0;
            for (const piece &p : pieces_) {
                if (p.group != g)
                    continue;
                for (; quad < p.row / 4; ++quad)
                    lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
                if (p.row > 0) {
                    cmp(qword[rsp + stk_rows], p.row);
                    jbe(l_group_done, T_NEAR);
                }
                const Address a = row_addr(p.row, p.group);
                if (p.lane == 0) {
                    vmovdqu8(a | k_cols_, Xmm(p.reg));
                } else {
                    vextracti32x4(xt, Zmm(p.reg), p.lane);
                    vmovdqu8(a | k_cols_, xt);
                }
            }
            L(l_group_done);
        }
    }

    // To `l` where fewer than `width` columns are left (reg_tmp_: those
    // left).
    void if_fewer_columns(int width, const Label &l) {
        mov(reg_tmp_, ptr[reg_param_ + offsetof(transpose_call_args, cols)]);
        sub(reg_tmp_, ptr[rsp + stk_c0]);
        cmp(reg_tmp_, width);
        jb(l, T_NEAR);
    }

    // On to the next `width` columns: c0, the source and dst blocks.
    void next_columns(int width) {
        add(qword[rsp + stk_c0], width);
        imul(reg_tmp_, reg_ld_, width);
        add(reg_sblk_, reg_tmp_);
        add(reg_dblk_, width * w_);
    }

    // Scalar copy of columns [c0, cols) x all rows (AVX2 tails).
    void scalar_columns_left() {
        mov(r12, ptr[rsp + stk_c0]);
        mov(r13, ptr[reg_param_ + offsetof(transpose_call_args, cols)]);
        xor_(r14, r14);
        mov(r15, ptr[reg_param_ + offsetof(transpose_call_args, rows)]);
        scalar_rect();
    }

    // Scalar copy of columns [r12, r13) x rows [r14, r15) (AVX2 tails).
    void scalar_rect() {
        const Reg64 c_beg = r12, c_end = r13, r_beg = r14, r_end = r15;
        const Reg64 c = reg_q_, r = reg_r0_, s = reg_sblk_, d = reg_dblk_;
        Label l_c, l_r, l_next, l_done;
        mov(c, c_beg);
        cmp(c, c_end);
        jae(l_done, T_NEAR);
        L(l_c);
        {
            mov(r, r_beg);
            cmp(r, r_end);
            jae(l_next, T_NEAR);
            mov(s, c);
            imul(s, reg_ld_);
            add(s, ptr[reg_param_ + offsetof(transpose_call_args, src)]);
            mov(d, ptr[reg_param_ + offsetof(transpose_call_args, dst)]);
            lea(d, ptr[d + c * w_]);
            mov(reg_tmp2_, r);
            imul(reg_tmp2_, reg_dld_);
            add(reg_tmp2_, d);
            // A loop this short ran 1.45x slower where the JIT's code
            // before it left it across a 32-byte boundary (an AVX2 call of
            // 10 rows by 69 columns, docs/performance.md).
            align(32);
            L(l_r);
            {
                const Address src_e = ptr[s + r * w_];
                switch (w_) {
                    case 1:
                        movzx(eax, byte[s + r]);
                        mov(byte[reg_tmp2_], al);
                        break;
                    case 2:
                        movzx(eax, word[s + r * 2]);
                        mov(word[reg_tmp2_], ax);
                        break;
                    case 4:
                        mov(eax, src_e);
                        mov(dword[reg_tmp2_], eax);
                        break;
                    default:
                        mov(rax, src_e);
                        mov(qword[reg_tmp2_], rax);
                        break;
                }
                add(reg_tmp2_, reg_dld_);
                inc(r);
                cmp(r, r_end);
                jb(l_r, T_NEAR);
            }
            L(l_next);
            inc(c);
            cmp(c, c_end);
            jb(l_c, T_NEAR);
        }
        L(l_done);
    }

    // Wide tile j (0 .. tr_ / wide_rows() - 1) of a step of tr_ rows: rows
    // reg_r0_ .. + wide_rows() - 1 of kcw_ columns from reg_sblk_, each
    // register built from n_lanes 16-byte pieces (a load, then inserts
    // from memory), the network, and one store per row (a whole vector;
    // AVX2 bytes: a lane). It prefetches the counterparts of lines k = j,
    // j + S, ... (S = tr_ / wide_rows() tiles per step): over a step, each
    // line once per tr_ rows, as full_tile does (with no prefetch due, the
    // hint falls on the line itself).
    int wide_rows() const { return lane_bytes / w_; }
    void wide_tile(int j) {
        load_wide_lines(j);
        wide_network();
        row_pointer();
        for (int row = 0; row < wide_rows(); ++row) {
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            store_wide_row(row);
        }
    }

    // A wide tile's registers from rows reg_r0_ .. of its kcw_ lines at
    // reg_sblk_, with wide_tile j's prefetch (j < 0: none).
    void load_wide_lines(int j) {
        const int steps = tr_ / wide_rows();
        lea(reg_p_[0], ptr[reg_sblk_ + reg_r0_ * w_]);
        lane_pointers();
        if (j >= 0)
            mov(reg_tmp2_, ptr[rsp + stk_pf]);
        for (int k = 0; k < nl_; ++k) {
            if (k > 0 && k % 4 == 0)
                for (int ln = 0; ln < n_lanes; ++ln)
                    lea(reg_p_[ln], ptr[reg_p_[ln] + reg_ld_ * 4]);
            for (int ln = 0; ln < n_lanes; ++ln) {
                const Address a = line_at(reg_p_[ln], k % 4);
                if (ln == 0)
                    vmovdqu(Xmm(k), a);
                else if constexpr (is_avx512)
                    vinserti32x4(Zmm(k), Zmm(k), a, ln);
                else
                    vinserti128(Ymm(k), Ymm(k), a, 1);
            }
            if (j >= 0 && k % steps == j)
                for (int ln = 0; ln < n_lanes; ++ln) {
                    lea(reg_tmp_, ptr[reg_p_[ln] + reg_tmp2_]);
                    prefetcht2(line_at(reg_tmp_, k % 4));
                }
        }
    }
    // reg_p_[L] = reg_p_[0] + L * nl_ lines: the wide tiles' lane bases.
    void lane_pointers() {
        if (n_lanes == 1)
            return;
        imul(reg_tmp_, reg_ld_, nl_);
        for (int ln = 1; ln < n_lanes; ++ln)
            lea(reg_p_[ln], ptr[reg_p_[ln - 1] + reg_tmp_]);
    }

    // The wide tiles' network (AVX2 bytes: then one row of 16 columns to
    // each lane).
    void wide_network() {
        for (const unpack_op &op : wops_) {
            unpack(Vmm(op.dst_lo), Vmm(op.a), Vmm(op.b), op.gran, false);
            unpack(Vmm(op.dst_hi), Vmm(op.a), Vmm(op.b), op.gran, true);
        }
        if constexpr (!is_avx512)
            if (wide_perm_)
                for (int reg : wide_out_)
                    vpermq(Ymm(reg), Ymm(reg), 0xD8);
    }
    // Row `row` of a wide tile to its dst row (reg_q_ = row & ~3).
    void store_wide_row(int row) {
        const auto [reg, h] = wrow_[static_cast<size_t>(row)];
        if constexpr (is_avx512) {
            if (nt_)
                vmovntdq(row_addr(row, 0), Vmm(reg));
            else
                vmovdqu32(row_addr(row, 0), Vmm(reg));
        } else if (!wide_perm_)
            vmovdqu(row_addr(row, 0), Vmm(reg));
        else if (h == 0)
            vmovdqu(row_addr(row, 0), Xmm(reg));
        else
            vextracti128(row_addr(row, 0), Ymm(reg), 1);
    }

    // A call of at most short_max_ rows (AVX-512, at most one lane of each
    // line): a register tile would load each of its 16 lines masked to
    // those rows and run the network over all tr_ = 64 / w, most of it on
    // nothing ([10, 47] bytes: 10 of 64 rows). The wide tiles' arrangement
    // instead fills every lane: register k holds in lane L the rows of
    // line nl_ * L + k, loaded by a load masked to those rows' bytes of
    // lane L (merging, at the line's address less 16 L bytes, so that
    // nothing outside the rows is read), and the network leaves whole rows
    // of kcw_ columns, stored masked to the columns. Column blocks of
    // kcw_; lines past the last column are not loaded. Any store kind:
    // stores are regular, as the partial tiles' (no carry is left or
    // taken, as with partial tiles). On an Intel Xeon, 1.5-2.3x the
    // register tiles' speed for bytes, 1.0-2.0x for 2-byte elements and
    // 1.1-1.7x for two rows of 4 bytes; calls of two lanes' rows ran no
    // faster (docs/performance.md).
    void short_rows(const Label &l_done) {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        const size_t off_rows = offsetof(transpose_call_args, rows);
        const size_t off_cols = offsetof(transpose_call_args, cols);
        const int lane_elems = lane_bytes / w_;
        const Opmask k_lane[4] = { k_rows_, k4, k5, k6 };
        Label l_no, l_cb;
        mov(reg_tmp2_, arg(off_rows));
        cmp(reg_tmp2_, short_max_);
        ja(l_no, T_NEAR);
        elem_mask(k_rows_);
        for (int ln = 1; ln < n_lanes; ++ln)
            kshiftlq(k_lane[ln], k_rows_, ln * lane_bytes);
        L(l_cb);
        mov(reg_tmp_, arg(off_cols));
        sub(reg_tmp_, ptr[rsp + stk_c0]);
        jbe(l_done, T_NEAR);
        mov(reg_tmp2_, kcw_);
        cmp(reg_tmp_, reg_tmp2_);
        cmova(reg_tmp_, reg_tmp2_);
        mov(ptr[rsp + stk_cols], reg_tmp_);
        mov(reg_tmp2_, reg_tmp_);
        elem_mask(k_cols_);
        mov(reg_p_[0], reg_sblk_);
        lane_pointers();
        // In line order, so that the first line past the last column ends
        // the loads.
        Label l_loaded;
        for (int ln = 0; ln < n_lanes; ++ln) {
            for (int k = 0; k < nl_; ++k) {
                const int line = nl_ * ln + k;
                if (k > 0 && k % 4 == 0)
                    lea(reg_p_[ln], ptr[reg_p_[ln] + reg_ld_ * 4]);
                if (line > 0) {
                    cmp(qword[rsp + stk_cols], line);
                    jbe(l_loaded, T_NEAR);
                }
                const Address a = line_at(reg_p_[ln], k % 4, -ln * lane_bytes);
                if (ln == 0)
                    vmovdqu8(Zmm(k) | k_lane[0] | T_z, a);
                else
                    vmovdqu8(Zmm(k) | k_lane[ln], a);
            }
        }
        L(l_loaded);
        wide_network();
        mov(reg_q_, reg_dblk_);
        Label l_stored;
        for (int row = 0; row < lane_elems; ++row) {
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            if (row > 0) {
                cmp(qword[reg_param_ + off_rows], row);
                jbe(l_stored, T_NEAR);
            }
            vmovdqu8(row_addr(row, 0) | k_cols_,
                     Zmm(wrow_[static_cast<size_t>(row)].first));
        }
        L(l_stored);
        next_columns(kcw_);
        jmp(l_cb, T_NEAR);
        L(l_no);
    }

    // AVX2, a call of fewer than tr_ rows that is not packed: register
    // tiles of kc_ whole vectors from each line (its rows and the bytes
    // after them), each tile's pieces stored for the call's rows only, in
    // column blocks of kc_ while every vector a block loads ends within
    // the source's span (the last line's last row): nothing outside the
    // source is read, and only its rows are stored. The columns left, and
    // all of a call whose span is shorter than that, run scalar_rect. A
    // register tile's loads cannot be masked to bytes or words on AVX2,
    // and before this, such calls ran scalar_rect whole (twelve 1-byte
    // channels de-interleaved at 1.1-1.7 GB/s, docs/performance.md).
    void avx2_short_rows(const Label &l_done) {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        const size_t off_rows = offsetof(transpose_call_args, rows);
        const size_t off_cols = offsetof(transpose_call_args, cols);
        const int stk_limit = stk_pf; // unused on this path
        Label l_no, l_cb, l_tail;
        mov(reg_tmp_, arg(off_rows));
        cmp(reg_tmp_, tr_);
        jae(l_no, T_NEAR);
        mov(ptr[rsp + stk_rows], reg_tmp_);
        // limit = src + (cols - 1) * ld + rows * w - vlen: the last line
        // address a whole vector may be loaded from.
        mov(reg_tmp2_, arg(off_cols));
        dec(reg_tmp2_);
        imul(reg_tmp2_, reg_ld_);
        lea(reg_tmp2_, ptr[reg_tmp2_ + reg_tmp_ * w_ - vlen]);
        add(reg_tmp2_, reg_sblk_);
        mov(ptr[rsp + stk_limit], reg_tmp2_);
        xor_(reg_r0_, reg_r0_);
        if (short_) {
            // At most a lane of rows: wide tiles of kcw_ columns while the
            // 16-byte loads of a block's lines end within the span.
            Label l_wide, l_regular;
            cmp(qword[rsp + stk_rows], short_max_);
            ja(l_regular, T_NEAR);
            L(l_wide);
            if_fewer_columns(kcw_, l_regular);
            imul(reg_tmp_, reg_ld_, kcw_ - 1);
            add(reg_tmp_, reg_sblk_);
            sub(reg_tmp_, vlen - lane_bytes); // the limit is for vlen bytes
            cmp(reg_tmp_, ptr[rsp + stk_limit]);
            ja(l_regular, T_NEAR);
            short_wide_tile();
            next_columns(kcw_);
            jmp(l_wide, T_NEAR);
            L(l_regular);
        }
        L(l_cb);
        if_fewer_columns(kc_, l_tail);
        lea(reg_tmp_, ptr[reg_sblk_ + reg_ld3_ * 2]);
        add(reg_tmp_, reg_ld_); // line kc_ - 1 = 7
        cmp(reg_tmp_, ptr[rsp + stk_limit]);
        ja(l_tail, T_NEAR);
        tile_pointers();
        for (int l = 0; l < kc_; ++l)
            vmovdqu(Ymm(l), line_addr(l));
        network();
        row_pointer();
        for (const auto &u : upper_)
            vextracti128(Xmm(u.second), Ymm(u.first), 1);
        Label l_stored;
        int quad = 0, last_row = 0;
        for (size_t i = 0; i < pieces_.size();) {
            const piece &p = pieces_[i];
            if (p.row < last_row)
                throw Error(ERR_INTERNAL); // pieces in row order
            for (; quad < p.row / 4; ++quad)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            if (p.row > last_row) {
                cmp(qword[rsp + stk_rows], p.row);
                jbe(l_stored, T_NEAR);
                last_row = p.row;
            }
            i += store_pieces(i, row_addr(p.row, p.group));
        }
        L(l_stored);
        next_columns(kc_);
        jmp(l_cb, T_NEAR);
        L(l_tail);
        scalar_columns_left();
        jmp(l_done, T_NEAR);
        L(l_no);
    }

    // AVX2, a call of at most short_max_ rows: a wide tile of kcw_ columns
    // at reg_sblk_, register k holding 16 bytes of line k in lane 0 and of
    // line nl_ + k in lane 1 (the call's rows and the bytes after them,
    // within the source's span: avx2_short_rows), its rows below
    // [rsp + stk_rows] stored whole to reg_dblk_.
    void short_wide_tile() {
        load_wide_lines(-1); // reg_r0_ = 0
        wide_network();
        mov(reg_q_, reg_dblk_);
        Label l_stored;
        for (int row = 0; row < wide_rows(); ++row) {
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            if (row > 0) {
                cmp(qword[rsp + stk_rows], row);
                jbe(l_stored, T_NEAR);
            }
            store_wide_row(row);
        }
        L(l_stored);
    }

    // Column blocks of kcw_ columns in wide tiles while whole ones are
    // left, steps of tr_ rows, the rows left as by the regular loop; then on
    // to `l_cols` (the regular loop, from the next column). To `l_unsuited`
    // at once where the call's lines do not suit wide tiles (wide_lines).
    // The regular variant, and the AVX-512 non-temporal one (nt_blocks),
    // whose wide rows are whole 64-byte lines, streamed as they are.
    void wide_blocks(const Label &l_unsuited, const Label &l_cols) {
        wide_lines(l_unsuited);
        column_blocks(l_cols, kcw_, [&] {
            for (int j = 0; j < tr_ / wide_rows(); ++j) {
                wide_tile(j);
                add(reg_r0_, wide_rows());
            }
        });
    }

    // Jumps to `l_no` unless this call's lines suit wide tiles. A wide tile
    // reads each line's 64 bytes in tr_ / nl_ passes, so its kcw_ lines
    // must stay in L1 between them: lines within wide_span bytes do. Lines
    // further apart do where the source is in the caches (src_cached: the
    // scratch, read by the dst transposes) unless src_ld is within two
    // cache lines of a multiple of 4 KiB, which puts all of them into one
    // or two of the L1's 64 sets; from memory (a [2048, 2048] cond's
    // columns) a wide tile's 64 lines of bytes at once ran slower than
    // the register tiles' 16 (docs/performance.md). Streamed tiles
    // (pf_next) keep the register tiles their linear prefetch is spread
    // over.
    void wide_lines(const Label &l_no) {
        const auto arg = [&](size_t off) { return qword[reg_param_ + off]; };
        cmp(arg(offsetof(transpose_call_args, pf_next_bytes)), 0);
        jne(l_no, T_NEAR);
        Label l_yes;
        imul(reg_tmp_, reg_ld_, kcw_);
        cmp(reg_tmp_, wide_span);
        jbe(l_yes, T_NEAR);
        cmp(arg(offsetof(transpose_call_args, src_cached)), 0);
        je(l_no, T_NEAR);
        lea(reg_tmp_, ptr[reg_ld_ + 128]);
        and_(reg_tmp_, 4095);
        cmp(reg_tmp_, 256);
        jb(l_no, T_NEAR);
        L(l_yes);
    }

    // Column blocks of `width` columns (a multiple of kc_) while whole
    // ones are left, each in steps of tr_ rows by `step` (which leaves
    // reg_r0_ tr_ rows on), the rows left as by the regular loop; then on
    // to `l_cols` (the regular loop, from the next column).
    template <typename Step>
    void column_blocks(const Label &l_cols, int width, Step step) {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        Label l_blk, l_rows, l_tail;
        L(l_blk);
        if_fewer_columns(width, l_cols);
        set_prefetch(width);
        xor_(reg_r0_, reg_r0_);
        L(l_rows);
        mov(reg_tmp_, arg(offsetof(transpose_call_args, rows)));
        sub(reg_tmp_, reg_r0_);
        cmp(reg_tmp_, tr_);
        jb(l_tail, T_NEAR);
        step();
        jmp(l_rows, T_NEAR);
        L(l_tail);
        for (int t = 0; t < width / kc_; ++t)
            row_tail_then_next_block();
        jmp(l_blk, T_NEAR);
    }

    // The packed calls' two blocks (in, out) follow the staging block.
    // The staging block's bytes: stage_max, or AVX2 bytes' four-line
    // blocks of 32 rows (8 KiB).
    int stage_bytes() const { return std::max(stage_max, tr_ * sb4_ * w_); }
    int stk_pk_at() const { return stk_slots + (nt_ ? stage_bytes() + 64 : 0); }
    int stk_size() const { return stk_pk_at() + 2 * packed_max * vlen; }

    // Column prefetch offset for the column block at c0 = [rsp + stk_c0]
    // of `width` columns: pf_ahead * src_ld where columns c0 + pf_ahead ..
    // c0 + pf_ahead + width - 1 are below pf_cols, else 0.
    void set_prefetch(int width) {
        mov(reg_tmp_, ptr[rsp + stk_c0]);
        add(reg_tmp_, pf_ahead + width);
        xor_(reg_tmp2_, reg_tmp2_);
        cmp(reg_tmp_, ptr[reg_param_ + offsetof(transpose_call_args, pf_cols)]);
        cmovbe(reg_tmp2_, ptr[rsp + stk_pf_dist]);
        mov(ptr[rsp + stk_pf], reg_tmp2_);
    }

    // The non-temporal variant's column blocks of sb_ columns while whole
    // ones are left, where dst and dst_ld are multiples of 64 bytes; then
    // on to `l_cols` (the regular loop, from the next column).
    // With a carry (transpose_call_args::carry, carry_ok_), the same
    // blocks where dst or dst_ld is not a multiple of 64 bytes but both
    // are of g_, written by carried_block in whole lines.
    void nt_blocks(const Label &l_cols) {
        lea(reg_tmp_, ptr[rsp + stk_slots + 63]);
        and_(reg_tmp_, ~int32_t(63));
        mov(ptr[rsp + stk_stage], reg_tmp_);
        mov(reg_tmp_, reg_dblk_);
        or_(reg_tmp_, reg_dld_);
        test(reg_tmp_, 63);
        Label l_carry;
        jnz(carry_ok_ ? l_carry : l_cols, T_NEAR);
        if (wide_) {
            // AVX-512: a wide tile's rows are whole lines (kcw_ = sb_).
            Label l_staged;
            wide_blocks(l_staged, l_cols);
            L(l_staged);
        }
        if (sb4_ > sb_) {
            // AVX2: four lines of each row where dst_ld is a multiple of
            // 256 bytes (sb4_), the blocks of one line after them.
            Label l_one;
            test(reg_dld_, 255);
            jnz(l_one, T_NEAR);
            column_blocks(l_one, sb4_, [&] {
                staged_block(sb4_);
                add(reg_r0_, tr_);
            });
            L(l_one);
        }
        column_blocks(l_cols, sb_, [&] {
            staged_block(sb_);
            add(reg_r0_, tr_);
        });
        if (!carry_ok_)
            return;
        L(l_carry);
        test(reg_tmp_, g_ - 1);
        jnz(l_cols, T_NEAR);
        cmp(qword[reg_param_ + offsetof(transpose_call_args, carry)], 0);
        je(l_cols, T_NEAR);
        column_blocks(l_cols, cb_, [&] {
            carried_block();
            add(reg_r0_, tr_);
        });
    }

    // A block of tr_ rows by cb_ columns through the staging block, as
    // staged_block, into dst rows that do not start cache lines. A row's
    // piece (one to eight vectors) at a, m = a % 64 bytes past a line, is
    // joined to the previous block's last vector (the row's carry slot):
    // the m bytes of the slot's end, then the piece's first vlen - m bytes
    // (AVX-512: vpermi2{b,w,d} with indices vlen / g_ - m / g_ + e; AVX2:
    // carry_rows_avx2) make the aligned line at a - m, and so on along the
    // piece, streamed; the piece's last 64 bytes become the slot. Lines of
    // a row back to back (cb_): streaming one line of each of the tile's
    // rows, rows a little less than 4 KiB apart (or 8), ran at 0.55-0.65 of
    // the speed of two on an Intel Xeon (L12: its rows' lines agree in
    // address bits 6 to 11; docs/performance.md); bytes take one line a
    // row all the same (a block within the chain's granule): on AVX2 two
    // (a granule of 128 columns) ran within the noise of one on a Zen 3
    // guest; both unmeasured on Intel. The first block of a chain (c0 =
    // 0 without carry_in) has no slot to join, and the last block of a
    // call whose carry_out is not honoured must leave no byte in the
    // slots: their partial lines are stored with regular stores
    // (carry_rows).
    void carried_block() {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        // The staged rows, and on AVX2 a tail's reads two vectors past
        // the last (carry_rows_avx2).
        if (tr_ * carry_pitch() + (is_avx512 ? 0 : carry_at() + 2 * vlen)
                    > stage_bytes()
            || int(transpose_carry_cols) % cb_ != 0)
            throw Error(ERR_INTERNAL);
        for (int sub = 0; sub < cb_ / kc_; ++sub)
            full_tile(true, sub, carry_pitch(), carry_at());
        mov(reg_tmp2_, ptr[rsp + stk_stage]);
        if (carry_at())
            add(reg_tmp2_, carry_at());
        row_pointer();
        mov(r15, arg(offsetof(transpose_call_args, carry)));
        mov(reg_tmp_, reg_r0_);
        shl(reg_tmp_, 6);
        add(r15, reg_tmp_);
        // The block ends the chain where it is the call's last whole block
        // and the call's carry_out is not honoured (honoured for a
        // multiple of transpose_carry_cols columns, the granule, of which
        // cb_ is a divisor: a chain of 32-column blocks left 96 columns'
        // tails in the slots of a call that had to write them), and starts
        // one where it is the call's first without carry_in.
        Label l_keep, l_end;
        mov(reg_tmp_, arg(offsetof(transpose_call_args, cols)));
        sub(reg_tmp_, ptr[rsp + stk_c0]);
        cmp(reg_tmp_, 2 * cb_); // two blocks
        jae(l_keep, T_NEAR);
        cmp(qword[reg_param_ + offsetof(transpose_call_args, carry_out)], 0);
        Label l_flush;
        je(l_flush, T_NEAR);
        test(byte[reg_param_ + offsetof(transpose_call_args, cols)],
             int(transpose_carry_cols) - 1);
        jz(l_keep, T_NEAR);
        L(l_flush);
        carried_rows(true);
        jmp(l_end, T_NEAR);
        L(l_keep);
        carried_rows(false);
        L(l_end);
    }

    // carried_block's rows, the first block of a chain (c0 = 0 without
    // carry_in) apart from the others; `last`: the chain ends here.
    void carried_rows(bool last) {
        Label l_mid, l_end;
        cmp(qword[rsp + stk_c0], 0);
        jne(l_mid, T_NEAR);
        cmp(qword[reg_param_ + offsetof(transpose_call_args, carry_in)], 0);
        jne(l_mid, T_NEAR);
        carry_rows(true, last);
        jmp(l_end, T_NEAR);
        L(l_mid);
        carry_rows(false, last);
        L(l_end);
    }

    // The staging block of carried_block: rows of its cb_ columns (64 to
    // 256 bytes), on AVX2 each after 32 bytes for its carry's upper half
    // (carry_rows).
    int carry_at() const { return is_avx512 ? 0 : 32; }
    int carry_pitch() const { return cb_ * w_ + carry_at(); }

    // carried_block's rows (reg_tmp2_: the staging block, reg_q_: dst row
    // 0, r15: row 0's slot): each piece's aligned lines streamed, its last
    // 64 bytes kept in the slot. `head`: the chain's first block, whose
    // pieces have no slot to join (the bytes before them belong to other
    // rows); `tail`: the chain's last, whose slots are not continued.
    void carry_rows(bool head, bool tail) {
        if constexpr (is_avx512)
            carry_rows_avx512(head, tail);
        else
            carry_rows_avx2(head, tail);
    }

    // AVX-512: a head's first line is stored by a regular store masked to
    // the piece's bytes (its first m bytes are another row's), and a tail's
    // m bytes past its last streamed line likewise, each within its aligned
    // line; every other line is streamed once. Storing a head's or tail's
    // pieces whole with regular stores instead wrote their lines twice,
    // through the cache: chains of 4 or 5 blocks ([4, 256, 12544] in column
    // blocks of 64 rows) ran their dst transposes 3.5x slower than aligned
    // rows (docs/performance.md).
    void carry_rows_avx512(bool head, bool tail) {
        const int row_bytes = cb_ * w_, nv = row_bytes / vlen;
        const int n_e = vlen / g_;
        const Zmm cur[4] = { Zmm(0), Zmm(1), Zmm(5), Zmm(6) };
        const Zmm car(2), idx(3), idx1(4);
        const Opmask k_head = k4, k_tail = k5;
        const auto kmov = [&](const Opmask &k, const Reg64 &r) {
            if (g_ == 1)
                kmovq(k, r);
            else if (g_ == 2)
                kmovd(k, r.cvt32());
            else
                kmovw(k, r.cvt32());
        };
        // The line at r14 + j * vlen: the m bytes of `lo`'s end, then the
        // first vlen - m bytes of `hi`; stored under `k`, or streamed.
        const auto line = [&](int j, const Zmm &lo, const Zmm &hi,
                              const Opmask *k) {
            vmovdqa64(idx1, idx);
            if (g_ == 1)
                vpermi2b(idx1, lo, hi);
            else if (g_ == 2)
                vpermi2w(idx1, lo, hi);
            else
                vpermi2d(idx1, lo, hi);
            if (!k)
                vmovntdq(ptr[r14 + j * vlen], idx1);
            else if (g_ == 1)
                vmovdqu8(ptr[r14 + j * vlen] | *k, idx1);
            else if (g_ == 2)
                vmovdqu16(ptr[r14 + j * vlen] | *k, idx1);
            else
                vmovdqu32(ptr[r14 + j * vlen] | *k, idx1);
        };
        for (int row = 0; row < tr_; ++row) {
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            for (int j = 0; j < nv; ++j)
                vmovdqa64(cur[j], ptr[reg_tmp2_ + row * row_bytes + j * vlen]);
            // r14: the aligned line at a - m; r12: m / g_, then n_e - m /
            // g_ (the join's first index).
            lea(r14, row_addr(row, 0));
            mov(r12, r14);
            and_(r12, 63);
            sub(r14, r12);
            if (g_ > 1)
                shr(r12, ilog2(g_));
            if (head || tail) {
                // Elements [0, m / g_) of a line: the tail's; the rest:
                // the head's.
                mov(rax, -1);
                bzhi(r13, rax, r12);
                if (tail)
                    kmov(k_tail, r13);
                if (head) {
                    not_(r13);
                    kmov(k_head, r13);
                }
            }
            Label l_aligned, l_done;
            if (head) {
                // m = 0: the piece's lines are its own vectors, streamed.
                test(r12, r12);
                jz(l_aligned, T_NEAR);
            }
            neg(r12);
            add(r12, n_e);
            if (g_ == 1) {
                vpbroadcastb(idx, r12b);
                vpaddb(idx, idx, ptr[rip + iota_constant(1)]);
            } else if (g_ == 2) {
                vpbroadcastw(idx, r12w);
                vpaddw(idx, idx, ptr[rip + iota_constant(2)]);
            } else {
                vpbroadcastd(idx, r12d);
                vpaddd(idx, idx, ptr[rip + iota_constant(4)]);
            }
            if (!head)
                vmovdqa64(car, ptr[r15 + row * 64]);
            for (int j = 0; j < nv; ++j)
                line(j, j == 0 ? (head ? cur[0] : car) : cur[j - 1], cur[j],
                     head && j == 0 ? &k_head : nullptr);
            if (tail)
                line(nv, cur[nv - 1], cur[nv - 1], &k_tail);
            if (head) {
                jmp(l_done, T_NEAR);
                L(l_aligned);
                for (int j = 0; j < nv; ++j)
                    vmovntdq(ptr[r14 + j * vlen], cur[j]);
                L(l_done);
            }
            vmovdqa64(ptr[r15 + row * 64], cur[nv - 1]);
        }
    }

    // AVX2: a row's piece is nv vectors s0 .. s(nv-1) (two for bytes,
    // four for 2-byte elements, eight for 4- and 8-byte ones), and its
    // slot two, c0 and c1. With m = a % 64 = 32 * h + k (k < 32), the
    // aligned lines at a - m are, vector by vector, out_i = the last k
    // bytes of X_i, then the first 32 - k bytes of X_i+1, over X = c1,
    // s0, .. s(nv-1) (h = 0) or c0, c1, s0, .. s(nv-2) (h = 1): read from
    // memory, with c1 copied in front of the staged row (carry_at) so
    // that X_1 .. X_nv lie back to back either way. The join in dwords:
    // vpermd of both vectors with indices e - k / 4 (mod 8, vpermd's
    // three bits), blended (vpblendvb) under e < k / 4. 1- and 2-byte
    // elements, where k need not be a multiple of 4: the joins at k / 4
    // and k / 4 + 1 dwords, shifted (8 * (k % 4) bits up and 32 - 8 *
    // (k % 4) down; a shift of 32 is 0) and or-ed.
    // A head's first line and a tail's m bytes past its last streamed
    // line are stored as on AVX-512, by vpmaskmovd in dwords of their
    // aligned lines, and for 1- and 2-byte elements where m % 4 != 0 the
    // piece's first (last) bytes short of a dword by scalar stores (a
    // byte, then a word).
    void carry_rows_avx2(bool head, bool tail) {
        const int rb = cb_ * w_, nv = rb / vlen, pitch = carry_pitch();
        const bool sub_dword = w_ <= 2; // joins may fall inside a dword
        const Ymm iota(15), idx(14), msk(13), idx2(12), msk2(11), q(10);
        const Xmm up(9), down(8);
        const Ymm p[2] = { Ymm(0), Ymm(1) }, p2[2] = { Ymm(2), Ymm(3) };
        const Ymm z(4), z2(5), t(6), lim(7);
        vmovdqa(iota, ptr[rip + iota_constant(4)]);
        std::vector<uint8_t> eights(vlen, 0);
        for (int e = 0; e < vlen / 4; ++e)
            eights[static_cast<size_t>(e * 4)] = 8;
        Label &c8 = constant(std::move(eights));
        for (int row = 0; row < tr_; ++row) {
            const int s = row * pitch;
            if (row > 0 && row % 4 == 0)
                lea(reg_q_, ptr[reg_q_ + reg_dld_ * 4]);
            lea(r14, row_addr(row, 0));
            Label l_aligned, l_done;
            if (head) {
                // m = 0: the piece's lines are its own vectors, streamed.
                test(r14, 63);
                jz(l_aligned, T_NEAR);
            }
            vmovdqa(t, ptr[r15 + row * 64 + 32]);
            vmovdqa(ptr[reg_tmp2_ + s - 32], t);
            mov(r12, r14);
            and_(r12, 63);
            sub(r14, r12);
            if (head) {
                // lim: ceil(m / 4) - 1, the last dword of the line not the
                // piece's.
                lea(eax, ptr[r12 + 3]);
                shr(eax, 2);
                dec(eax);
                vmovd(Xmm(lim.getIdx()), eax);
                vpbroadcastd(lim, Xmm(lim.getIdx()));
            }
            if (sub_dword) {
                mov(eax, r12d);
                and_(eax, 3);
                shl(eax, 3);
                vmovd(up, eax);
                neg(eax);
                add(eax, 32);
                vmovd(down, eax);
            }
            mov(eax, r12d);
            and_(eax, 31);
            shr(eax, 2);
            vmovd(Xmm(q.getIdx()), eax);
            vpbroadcastd(q, Xmm(q.getIdx()));
            vpsubd(idx, iota, q);
            vpcmpgtd(msk, q, iota);
            if (sub_dword) {
                vpcmpeqd(t, t, t);
                vpsubd(q, q, t);
                vpsubd(idx2, iota, q);
                vpcmpgtd(msk2, q, iota);
            }
            // X_0 at rax, X_1 .. X_4 (X_5, X_6 past the piece, for a
            // tail's line) from r13 on.
            and_(r12d, 32);
            lea(r13, ptr[reg_tmp2_ + s]);
            sub(r13, r12);
            neg(r12);
            lea(rax, ptr[r15 + r12 + row * 64 + 32]);
            const auto x = [&](int i) {
                return i == 0 ? ptr[rax] : ptr[r13 + (i - 1) * vlen];
            };
            vpermd(p[0], idx, x(0));
            if (sub_dword)
                vpermd(p2[0], idx2, x(0));
            const int n_out = tail ? nv + 2 : nv;
            for (int i = 0; i < n_out; ++i) {
                const int c = i & 1, n = c ^ 1;
                vpermd(p[n], idx, x(i + 1));
                vpblendvb(z, p[n], p[c], msk);
                if (sub_dword) {
                    vpermd(p2[n], idx2, x(i + 1));
                    vpblendvb(z2, p2[n], p2[c], msk2);
                    vpslld(z, z, up);
                    vpsrld(z2, z2, down);
                    vpor(z, z, z2);
                }
                if (head && i < 2) {
                    // Dwords past lim.
                    vpcmpgtd(t, iota, lim);
                    vpmaskmovd(ptr[r14 + i * vlen], t, z);
                    if (i == 0)
                        vpsubd(lim, lim, ptr[rip + c8]);
                } else if (i < nv) {
                    vmovntdq(ptr[r14 + i * vlen], z);
                } else {
                    // A tail: dwords below floor(m / 4) of the line after.
                    if (i == nv) {
                        lea(r12, row_addr(row, 0));
                        sub(r12, r14);
                        shr(r12d, 2);
                        vmovd(Xmm(lim.getIdx()), r12d);
                        vpbroadcastd(lim, Xmm(lim.getIdx()));
                    }
                    vpcmpgtd(t, lim, iota);
                    vpmaskmovd(ptr[r14 + i * vlen], t, z);
                    if (i == nv)
                        vpsubd(lim, lim, ptr[rip + c8]);
                }
            }
            if (sub_dword && (head || tail)) {
                // m % 4 != 0: the piece's bytes in the dword the masks
                // leave out, after its start (head) and before its end
                // (tail); r13: the staged row less the dst row, so that
                // the byte for dst address x is at x + r13.
                lea(r12, row_addr(row, 0));
                lea(r13, ptr[reg_tmp2_ + s]);
                sub(r13, r12);
                // A byte where r12 is odd, then a word where r12 is 2 past
                // a dword, stepping r12 forwards (a head, from its first
                // byte) or backwards (a tail, from past its last).
                const auto scalar = [&](bool fwd) {
                    if (w_ == 1) {
                        Label l_even;
                        test(r12, 1);
                        jz(l_even, T_NEAR);
                        if (!fwd)
                            dec(r12);
                        movzx(eax, byte[r12 + r13]);
                        mov(byte[r12], al);
                        if (fwd)
                            inc(r12);
                        L(l_even);
                    }
                    Label l_dword;
                    test(r12, 2);
                    jz(l_dword, T_NEAR);
                    if (!fwd)
                        sub(r12, 2);
                    movzx(eax, word[r12 + r13]);
                    mov(word[r12], ax);
                    L(l_dword);
                };
                if (head)
                    scalar(true);
                if (tail) {
                    lea(r12, row_addr(row, 0, rb));
                    scalar(false);
                }
            }
            if (head) {
                jmp(l_done, T_NEAR);
                L(l_aligned);
                for (int j = 0; j < nv; ++j) {
                    vmovdqa(t, ptr[reg_tmp2_ + s + j * vlen]);
                    vmovntdq(ptr[r14 + j * vlen], t);
                }
                L(l_done);
            }
            for (int j = 0; j < 2; ++j) {
                vmovdqa(t, ptr[reg_tmp2_ + s + rb - 64 + j * vlen]);
                vmovdqa(ptr[r15 + row * 64 + j * vlen], t);
            }
        }
    }

    // 0, 1, 2, ... in elements of g bytes, one vector.
    Label &iota_constant(int g) {
        std::vector<uint8_t> v(vlen, 0);
        for (int e = 0; e < vlen / g; ++e) // little-endian, e < 256
            v[static_cast<size_t>(e * g)] = static_cast<uint8_t>(e);
        return constant(std::move(v));
    }

    // The rows from reg_r0_ on (fewer than tr_, maybe none) of the column
    // block at reg_sblk_ / reg_dblk_, then on to the next column block of
    // kc_ columns. AVX-512: a partial tile. AVX2: one full tile over the
    // last tr_ rows, storing again, with the same values, the rows before
    // reg_r0_ that it overlaps; a call of fewer than tr_ rows leaves them
    // to its final scalar pass.
    void row_tail_then_next_block() {
        Label l_none;
        mov(reg_tmp_, ptr[reg_param_ + offsetof(transpose_call_args, rows)]);
        if constexpr (is_avx512) {
            sub(reg_tmp_, reg_r0_);
            jz(l_none, T_NEAR);
            mov(ptr[rsp + stk_rows], reg_tmp_);
            mov(qword[rsp + stk_cols], kc_);
            partial_tile();
        } else {
            cmp(reg_tmp_, reg_r0_);
            je(l_none, T_NEAR);
            cmp(reg_tmp_, tr_);
            jb(l_none, T_NEAR);
            lea(reg_r0_, ptr[reg_tmp_ - tr_]);
            full_tile();
        }
        L(l_none);
        next_columns(kc_);
    }

    // --- few lines, packed ------------------------------------------------
    // A call of 2 .. pk_rows_ rows whose source lines lie back to back
    // (src_ld = rows * w: a channels-last block of a few channels), or of
    // 2 .. pk_cols_ columns whose dst rows do (dst_ld = cols * w), is one
    // contiguous block on one side: R vectors of it hold V = vlen / w
    // columns (rows) of all R lines, and each of the R vectors of the other
    // side is a fixed permutation of those R, computed at generation time.
    // The register tiles above would run such a call as partial tiles,
    // moving R of their tr_ (kc_) lines.

    // How a packed call of columns stores dst's rows (packed_call).
    enum class dst_rows { packed, kept, apart };

    // Where output element e of a packed block comes from.
    struct src_elem {
        int reg, lane;
    };

    // The label of a constant with these bytes, emitted once after the
    // code however many blocks use it (the main loops and the tail emit
    // the same block).
    Label &constant(std::vector<uint8_t> bytes) {
        for (size_t i = 0; i < consts_.size(); ++i)
            if (consts_[i] == bytes)
                return *const_labels_[i];
        consts_.push_back(std::move(bytes));
        const_labels_.push_back(std::make_unique<Label>());
        return *const_labels_.back();
    }
    template <typename T>
    static void put(std::vector<uint8_t> &v, size_t i, T x) {
        std::memcpy(v.data() + i * sizeof(T), &x, sizeof(T));
    }

    // acc = the vector whose element e is src[e] (input registers 0 ..
    // R - 1). AVX-512, 2-byte elements: one vpermw per source register,
    // merged under a mask; 4- and 8-byte elements: the same in dwords with
    // vpermd (AVX2: vpermd, then vpblendd). 1-byte elements, and 2-byte
    // ones on AVX2: passes of a vpermd that brings up to four dwords into
    // each 16-byte lane, then a vpshufb that picks the bytes from them and
    // zeroes the rest, or-ed together.
    // `ew`: the bytes of src's elements (0: w_), so that a block can move
    // whole dwords or lanes of an element size it does not hold.
    // An element of register -1 takes any value (a padded row's gap).
    // AVX-512 with AVX512_VBMI: 1-byte elements as the 2-byte ones, by
    // vpermi2b / vpermb merged under a mask (three 1-byte lines into
    // rows of 4 took 12 instructions an output vector in byte passes).
    void permuted(const std::vector<src_elem> &src, const Vmm &acc,
                  int ew = 0) {
        const Vmm t(9), idx(10);
        const Opmask km = k3;
        const int w = ew > 0 ? ew : w_;
        const int V = vlen / w;
        std::vector<int> order; // source registers, in first use
        for (const src_elem &s : src)
            if (s.reg >= 0
                && std::find(order.begin(), order.end(), s.reg) == order.end())
                order.push_back(s.reg);
        const bool words = is_avx512 && w == 2;
        const bool vbytes = is_avx512 && w == 1 && vbmi_;
        if (w >= 4 || words || vbytes) {
            const int u = words    ? 2
                          : vbytes ? 1
                                   : 4,
                      per = w / u, nu = vlen / u;
            // AVX-512: two source registers per vpermi2{w,d}.
            const size_t group = is_avx512 ? 2 : 1;
            bool first = true;
            for (size_t g0 = 0; g0 < order.size(); g0 += group) {
                const int ka = order[g0];
                const int kb = g0 + 1 < order.size() && group == 2
                                       ? order[g0 + 1]
                                       : -1;
                std::vector<uint8_t> ib(vlen, 0), mb(8, 0);
                uint64_t mask = 0;
                for (int e = 0; e < V; ++e) {
                    if (src[e].reg < 0
                        || (src[e].reg != ka && src[e].reg != kb))
                        continue;
                    const int hi = src[e].reg == kb ? nu : 0;
                    for (int j = 0; j < per; ++j) {
                        const int p = e * per + j;
                        const int s = src[e].lane * per + j + hi;
                        if (u == 1)
                            put(ib, p, static_cast<uint8_t>(s));
                        else if (u == 2)
                            put(ib, p, static_cast<uint16_t>(s));
                        else
                            put(ib, p, static_cast<uint32_t>(s));
                        mask |= uint64_t(1) << p;
                    }
                }
                put(mb, 0, mask);
                const Vmm v = first ? acc : t;
                if (collect_) {
                    // hoist_constants: note them, emit nothing.
                    collected_idx_.push_back(ib);
                    if (!first)
                        collected_mask_.push_back(mb);
                    first = false;
                    continue;
                }
                if constexpr (is_avx512) {
                    const Zmm z(v.getIdx());
                    // The index from its hoisted register, else loaded.
                    const int hz = hoisted(hoisted_idx_, ib);
                    if (hz < 0)
                        vload(z, ptr[rip + constant(ib)]);
                    else if (kb >= 0)
                        vmovdqa64(z, Zmm(hz));
                    const Zmm ix = hz < 0 ? z : Zmm(hz);
                    if (kb >= 0 && vbytes)
                        vpermi2b(z, Zmm(ka), Zmm(kb));
                    else if (kb >= 0 && words)
                        vpermi2w(z, Zmm(ka), Zmm(kb));
                    else if (kb >= 0)
                        vpermi2d(z, Zmm(ka), Zmm(kb));
                    else if (vbytes)
                        vpermb(z, ix, Zmm(ka));
                    else if (words)
                        vpermw(z, ix, Zmm(ka));
                    else
                        vpermd(z, ix, Zmm(ka));
                    if (!first) {
                        const int hk = hoisted(hoisted_mask_, mb);
                        if (hk < 0)
                            kmovq(km, ptr[rip + constant(mb)]);
                        const Opmask m = hk < 0 ? km : Opmask(hk);
                        if (vbytes)
                            vmovdqu8(Zmm(acc.getIdx()) | m, z);
                        else if (words)
                            vmovdqu16(Zmm(acc.getIdx()) | m, z);
                        else
                            vmovdqu32(Zmm(acc.getIdx()) | m, z);
                    }
                } else {
                    vload(idx, ptr[rip + constant(ib)]);
                    vpermd(Ymm(v.getIdx()), Ymm(idx.getIdx()), Ymm(ka));
                    if (!first)
                        vpblendd(Ymm(acc.getIdx()), Ymm(acc.getIdx()),
                                 Ymm(t.getIdx()), static_cast<uint8_t>(mask));
                }
                first = false;
            }
            return;
        }
        // Byte passes (nothing to hoist).
        if (collect_)
            return;
        const int nlanes = vlen / lane_bytes;
        bool first = true;
        for (int k : order) {
            // (dst byte, src byte) still to place from register k.
            std::vector<std::pair<int, int>> todo;
            for (int e = 0; e < V; ++e)
                if (src[e].reg == k)
                    for (int j = 0; j < w; ++j)
                        todo.emplace_back(e * w + j, src[e].lane * w + j);
            while (!todo.empty()) {
                std::vector<std::vector<int>> slots(nlanes);
                std::vector<uint8_t> ib(vlen, 0), sb(vlen, 0x80);
                std::vector<std::pair<int, int>> left;
                for (const auto &[b, s] : todo) {
                    std::vector<int> &sl = slots[b / lane_bytes];
                    auto it = std::find(sl.begin(), sl.end(), s / 4);
                    if (it == sl.end()) {
                        if (sl.size() == 4) {
                            left.emplace_back(b, s);
                            continue;
                        }
                        sl.push_back(s / 4);
                        it = sl.end() - 1;
                    }
                    const int q = static_cast<int>(it - sl.begin());
                    sb[b] = static_cast<uint8_t>(q * 4 + s % 4);
                }
                for (int ln = 0; ln < nlanes; ++ln)
                    for (size_t q = 0; q < slots[ln].size(); ++q)
                        put(ib, ln * 4 + q,
                            static_cast<uint32_t>(slots[ln][q]));
                vload(idx, ptr[rip + constant(ib)]);
                vpermd(t, idx, Vmm(k));
                if (first) {
                    vpshufb(acc, t, ptr[rip + constant(sb)]);
                } else {
                    vpshufb(t, t, ptr[rip + constant(sb)]);
                    if constexpr (is_avx512)
                        vpord(acc, acc, t);
                    else
                        vpor(acc, acc, t);
                }
                first = false;
                todo = std::move(left);
            }
        }
    }

    void vstore(const Address &a, const Vmm &v, bool nt) {
        if (nt)
            vmovntdq(a, v);
        else if constexpr (is_avx512)
            vmovdqu32(a, v);
        else
            vmovdqu(a, v);
    }
    void vload(const Vmm &v, const Address &a) {
        if constexpr (is_avx512)
            vmovdqu32(v, a);
        else
            vmovdqu(v, a);
    }

    // Copies n bytes from s to d (none of them rsi, rdi or rcx).
    void copy_bytes(const Reg64 &d, const Reg64 &s, const Reg64 &n) {
        push(rsi);
        push(rdi);
        mov(rdi, d);
        mov(rsi, s);
        mov(rcx, n);
        rep();
        movsb();
        pop(rdi);
        pop(rsi);
    }

    // Whether permuted() moves this element size in byte passes (1-byte
    // elements on AVX-512 with VBMI: not, byte_passes()).
    static constexpr bool byte_passes_for(int w) {
        return w == 1 || (!is_avx512 && w == 2);
    }
    bool byte_passes() const {
        return byte_passes_for(w_) && !(is_avx512 && w_ == 1 && vbmi_);
    }

    // The R output rows of a packed block of R rows (inputs in vectors 0
    // .. R - 1, reg_q_ = the first output row, rows ostride apart) where
    // permuted() would run byte passes. Output row o's lane L holds
    // elements L * 16 / w .. of row o, flat source elements R apart that
    // lie in the R source lanes (16-byte chunks, counted over the block)
    // L * R .. L * R + R - 1, whatever o is. So R vectors G_j are built
    // first, lane L of G_j = chunk L * R + j (whole lanes: vperm2i128 on
    // AVX2, vpermi2d pairs on AVX-512), and each output is then the OR of R
    // in-lane vpshufb of them: R + R * R shuffles for the block, where the
    // byte passes took up to 2 * 4R per output (three 1-byte channels on
    // AVX-512: 48 against 18; docs/performance.md).
    void regrouped_rows(int R, const Reg64 &ostride, bool nt) {
        const int g0 = is_avx512 ? 16 : 8; // G_j in g0 + j
        const int nu = vlen / 4;           // dwords per vector
        for (int j = 0; j < R; ++j) {
            const Vmm g(g0 + j);
            if constexpr (is_avx512) {
                std::vector<src_elem> src(static_cast<size_t>(nu));
                for (int d = 0; d < nu; ++d) {
                    const int c = (d * 4 / lane_bytes) * R + j;
                    const int f = c * (lane_bytes / 4) + d % (lane_bytes / 4);
                    src[static_cast<size_t>(d)] = { f / nu, f % nu };
                }
                permuted(src, g, 4);
            } else {
                // Chunk c is lane c % 2 of input c / 2.
                const int c0 = j, c1 = R + j;
                vperm2i128(
                        Ymm(g.getIdx()), Ymm(c0 / 2), Ymm(c1 / 2),
                        static_cast<uint8_t>((c0 % 2) | ((2 + c1 % 2) << 4)));
            }
        }
        // The inputs are dead: acc and t in vectors 0 and 1 (R >= 2).
        const Vmm acc(0), t(1);
        for (int o = 0; o < R; ++o) {
            bool first = true;
            for (int j = 0; j < R; ++j) {
                std::vector<uint8_t> sb(vlen, 0x80);
                bool any = false;
                for (int p = 0; p < vlen; ++p) {
                    const int L = p / lane_bytes, e = p / w_;
                    const int f = (e * R + o) * w_ + p % w_;
                    if (f / lane_bytes == L * R + j) {
                        sb[static_cast<size_t>(p)] =
                                static_cast<uint8_t>(f % lane_bytes);
                        any = true;
                    }
                }
                if (!any)
                    continue;
                if (first) {
                    vpshufb(acc, Vmm(g0 + j), ptr[rip + constant(sb)]);
                } else {
                    vpshufb(t, Vmm(g0 + j), ptr[rip + constant(sb)]);
                    if constexpr (is_avx512)
                        vpord(acc, acc, t);
                    else
                        vpor(acc, acc, t);
                }
                first = false;
            }
            vstore(ptr[reg_q_], acc, nt);
            if (o + 1 < R)
                add(reg_q_, ostride);
        }
    }

    // Output o's elements in a packed block of R lines (below; P: its
    // columns' dst rows).
    std::vector<src_elem> packed_src(int R, bool rows, int P, int o) const {
        const int V = vlen / w_;
        std::vector<src_elem> src(static_cast<size_t>(V));
        for (int e = 0; e < V; ++e) {
            // rows: out row o, column e <- flat element e * R + o;
            // columns: flat element o * V + e <- line f % P, row f / P (a
            // gap past line R).
            const int f = rows ? e * R + o : o * V + e;
            src[e] = rows        ? src_elem { f / V, f % V }
                     : f % P < R ? src_elem { f % P, f / P }
                                 : src_elem { -1, 0 };
        }
        return src;
    }

    // The register holding constant `bytes` (hoist_constants), or -1.
    static int
    hoisted(const std::vector<std::pair<std::vector<uint8_t>, int>> &h,
            const std::vector<uint8_t> &bytes) {
        for (const auto &[b, r] : h)
            if (b == bytes)
                return r;
        return -1;
    }

    // AVX-512: the permute indices and merge masks of a packed call's
    // block loaded once, before its loop, into the registers the block
    // leaves free (zmm11 .. zmm31, k4 .. k7), as many as fit, where the
    // block loaded each from memory for every output. Forgotten at
    // packed_call's end.
    void hoist_constants(int R, bool rows, int P) {
        if (!is_avx512 || (rows && byte_passes()))
            return;
        collect_ = true;
        for (int o = 0; o < (rows ? R : P); ++o)
            permuted(packed_src(R, rows, P, o), Vmm(8));
        collect_ = false;
        int z = 11, k = 4;
        for (const auto &b : collected_idx_)
            if (z < 32 && hoisted(hoisted_idx_, b) < 0) {
                vload(Vmm(z), ptr[rip + constant(b)]);
                hoisted_idx_.emplace_back(b, z++);
            }
        for (const auto &b : collected_mask_)
            if (k < 8 && hoisted(hoisted_mask_, b) < 0) {
                kmovq(Opmask(k), ptr[rip + constant(b)]);
                hoisted_mask_.emplace_back(b, k++);
            }
        collected_idx_.clear();
        collected_mask_.clear();
    }

    // The packed block of R lines: in vectors 0 .. R - 1 loaded (from
    // `in`, a vector apart, or from line pointers `istride` apart), out
    // vectors stored (to `out`, `ostride` apart, or a vector apart).
    // `rows`: R rows, the block's R vectors are the source's (transpose
    // of rows); else R columns, the block is dst's: P vectors of dst rows
    // of P elements (P > R: padded rows, transpose_call_args::dst_gaps,
    // whose gaps take whatever the permutes leave there).
    // `how`: R columns into dst rows whose gaps are not the caller's:
    // kept, each vector stored under k_cols_, the mask of its row lanes;
    // apart, each row of P elements stored at its own row (rows dst_ld
    // apart, from `out` on) under k_cols_, the mask of its R elements
    // (packed_call).
    void packed_block(int R, bool rows, const Reg64 &in, const Reg64 &istride,
                      const Reg64 &out, const Reg64 &ostride, bool nt,
                      int P = 0, dst_rows how = dst_rows::packed) {
        if (P == 0)
            P = R;
        if (rows) {
            for (int i = 0; i < R; ++i)
                vload(Vmm(i), ptr[in + i * vlen]);
        } else {
            mov(reg_q_, in);
            for (int i = 0; i < R; ++i) {
                vload(Vmm(i), ptr[reg_q_]);
                if (i + 1 < R)
                    add(reg_q_, istride);
            }
        }
        if (rows)
            mov(reg_q_, out);
        if (rows && byte_passes()) {
            regrouped_rows(R, ostride, nt);
            return;
        }
        for (int o = 0; o < P; ++o) {
            permuted(packed_src(R, rows, P, o), Vmm(8));
            if (rows) {
                vstore(ptr[reg_q_], Vmm(8), nt);
                if (o + 1 < R)
                    add(reg_q_, ostride);
            } else if (how == dst_rows::apart) {
                // The vector's V / P rows, each in P * w bytes from lane 0
                // of its 16-, 32- or 64-byte part (AVX2: in pieces).
                const int g = P * w_;
                if (o == 0)
                    mov(reg_q_, out);
                int high = 0; // AVX2: whether xmm9 holds the upper lane
                for (int j = 0; j < vlen / g; ++j) {
                    if constexpr (!is_avx512) {
                        store_row_pieces(j * g, R * w_, high);
                    } else if (g == 64 || j == 0) {
                        masked_store(ptr[reg_q_], part_of(8, g), k_cols_);
                    } else if (g == 32) {
                        vextracti64x4(Ymm(9), Zmm(8), j);
                        masked_store(ptr[reg_q_], Ymm(9), k_cols_);
                    } else {
                        vextracti32x4(Xmm(9), Zmm(8), j);
                        masked_store(ptr[reg_q_], Xmm(9), k_cols_);
                    }
                    add(reg_q_, reg_dld_);
                }
            } else if (how == dst_rows::kept) {
                masked_store(ptr[out + o * vlen], Vmm(8), k_cols_);
            } else {
                vstore(ptr[out + o * vlen], Vmm(8), nt);
            }
        }
    }
    // AVX2: the `bytes` bytes of ymm8 from byte `at` on stored at reg_q_
    // in pieces of 8, 4, 2 and 1 bytes (vmovq, vmovd, vpextr*), each
    // within one 16-byte lane at a multiple of its size; the upper lane
    // extracted into xmm9 once (`high`).
    void store_row_pieces(int at, int bytes, int &high) {
        int o = 0;
        for (int sz = 8; sz >= 1; sz /= 2)
            for (; bytes - o >= sz; o += sz) {
                const int pos = at + o, lane = pos / lane_bytes;
                const int idx = pos % lane_bytes / sz;
                if (lane && !high) {
                    vextracti128(Xmm(9), Ymm(8), 1);
                    high = 1;
                }
                const Xmm x(lane ? 9 : 8);
                switch (sz) {
                    case 8:
                        if (idx == 0)
                            vmovq(qword[reg_q_ + o], x);
                        else
                            vpextrq(qword[reg_q_ + o], x, idx);
                        break;
                    case 4:
                        if (idx == 0)
                            vmovd(dword[reg_q_ + o], x);
                        else
                            vpextrd(dword[reg_q_ + o], x, idx);
                        break;
                    case 2: vpextrw(word[reg_q_ + o], x, idx); break;
                    default: vpextrb(byte[reg_q_ + o], x, idx); break;
                }
            }
    }
    // Register `idx` as a vector of `bytes` bytes.
    static Xmm part_of(int idx, int bytes) {
        return bytes == 64   ? Xmm(Zmm(idx))
               : bytes == 32 ? Xmm(Ymm(idx))
                             : Xmm(idx);
    }
    // AVX-512: v stored under mask k, element by element.
    void masked_store(const Address &a, const Xmm &v, const Opmask &k) {
        if constexpr (is_avx512) {
            switch (w_) {
                case 1: vmovdqu8(a | k, v); break;
                case 2: vmovdqu16(a | k, v); break;
                case 4: vmovdqu32(a | k, v); break;
                default: vmovdqu64(a | k, v); break;
            }
        }
    }

    // A packed call of R lines (rows or columns): whole blocks of V, the
    // rest as one more block over the last V where the call has V (the
    // copies to and from the stack below took as long as three blocks:
    // 224 rows of three 1-byte lines spent 46% of their cycles in the 32
    // past the last block; docs/performance.md), else through two blocks
    // on the stack. P > R: R columns into dst rows P elements apart, gaps
    // written (transpose_call_args::dst_gaps).
    // dst_rows::kept (transpose_packs_kept_gaps): the same into rows whose
    // gaps are not the caller's, every store under the mask of the row
    // lanes; dst_rows::apart (transpose_packs_rows_apart): into rows at
    // any dst_ld, row by row under the mask of its R elements. Both store
    // regularly.
    void packed_call(int R, bool rows, const Label &l_done, int P = 0,
                     dst_rows how = dst_rows::packed) {
        const bool masked = how != dst_rows::packed;
        if (P == 0)
            P = R;
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        const int V = vlen / w_;
        const Reg64 cnt = reg_r0_;
        hoist_constants(R, rows, P);
        if (masked && is_avx512) {
            // kept: lane e holds a row element where e % P < R; apart: a
            // row's R elements from lane 0.
            uint64_t m = (uint64_t { 1 } << R) - 1;
            if (how == dst_rows::kept)
                for (int e = P; e < V; ++e)
                    if (e % P < R)
                        m |= uint64_t { 1 } << e;
            std::vector<uint8_t> b(8);
            put(b, 0, m);
            kmovq(k_cols_, ptr[rip + constant(std::move(b))]);
        }
        mov(cnt, arg(rows ? offsetof(transpose_call_args, cols)
                          : offsetof(transpose_call_args, rows)));
        packed_prefetch_step(cnt, V);
        // One block at reg_sblk_ / reg_dblk_.
        const auto block = [&](bool nt) {
            if (rows)
                packed_block(R, true, reg_sblk_, reg_sblk_, reg_dblk_, reg_dld_,
                             nt);
            else
                packed_block(R, false, reg_sblk_, reg_ld_, reg_dblk_, reg_dblk_,
                             nt, P, how);
        };
        const auto loop = [&](bool nt) {
            Label l_loop, l_end;
            L(l_loop);
            cmp(cnt, V);
            jb(l_end, T_NEAR);
            next_prefetch();
            block(nt);
            add(reg_sblk_, rows ? R * vlen : vlen);
            if (how == dst_rows::apart) {
                mov(reg_tmp_, reg_dld_);
                shl(reg_tmp_, ilog2(V));
                add(reg_dblk_, reg_tmp_);
            } else {
                add(reg_dblk_, rows ? vlen : P * vlen);
            }
            sub(cnt, V);
            jmp(l_loop, T_NEAR);
            L(l_end);
        };
        Label l_tail;
        if (nt_ && !masked) {
            // Non-temporal stores where every stored vector is aligned.
            Label l_regular;
            mov(reg_tmp_, reg_dblk_);
            if (rows)
                or_(reg_tmp_, reg_dld_);
            test(reg_tmp_, vlen - 1);
            jnz(l_regular, T_NEAR);
            loop(true);
            jmp(l_tail, T_NEAR);
            L(l_regular);
        }
        loop(false);
        L(l_tail);
        test(cnt, cnt);
        jz(l_done, T_NEAR);
        // A call of V or more: one more block over its last V, storing
        // again, with the same values, what it overlaps (regular stores).
        Label l_stack;
        cmp(qword[reg_param_
                  + (rows ? offsetof(transpose_call_args, cols)
                          : offsetof(transpose_call_args, rows))],
            V);
        jb(l_stack, T_NEAR);
        mov(reg_tmp_, V);
        sub(reg_tmp_, cnt);
        imul(reg_tmp2_, reg_tmp_, rows ? R * w_ : w_);
        sub(reg_sblk_, reg_tmp2_);
        if (how == dst_rows::apart) {
            mov(reg_tmp2_, reg_tmp_);
            imul(reg_tmp2_, reg_dld_);
        } else {
            imul(reg_tmp2_, reg_tmp_, rows ? w_ : P * w_);
        }
        sub(reg_dblk_, reg_tmp2_);
        block(false);
        jmp(l_done, T_NEAR);
        L(l_stack);
        const Reg64 sin = r12, sout = r13, n = r14, step = r15;
        lea(sin, ptr[rsp + stk_pk]);
        lea(sout, ptr[rsp + stk_pk + packed_max * vlen]);
        mov(step, vlen);
        if (rows) {
            imul(n, cnt, R * w_);
            copy_bytes(sin, reg_sblk_, n);
            packed_block(R, true, sin, sin, sout, step, false);
            imul(n, cnt, w_);
            for (int o = 0; o < R; ++o) {
                copy_bytes(reg_dblk_, sout, n);
                if (o + 1 < R) {
                    add(sout, vlen);
                    add(reg_dblk_, reg_dld_);
                }
            }
        } else {
            imul(n, cnt, w_);
            mov(reg_q_, reg_sblk_);
            for (int c = 0; c < R; ++c) {
                copy_bytes(sin, reg_q_, n);
                if (c + 1 < R) {
                    add(sin, vlen);
                    add(reg_q_, reg_ld_);
                }
            }
            lea(sin, ptr[rsp + stk_pk]);
            packed_block(R, false, sin, step, sout, sout, false, P);
            if (masked) {
                // Row by row: the R elements of each, not its gaps.
                Label l_row;
                L(l_row);
                mov(n, R * w_);
                copy_bytes(reg_dblk_, sout, n);
                add(sout, P * w_);
                add(reg_dblk_, reg_dld_);
                dec(cnt);
                jnz(l_row, T_NEAR);
            } else {
                imul(n, cnt, P * w_);
                copy_bytes(reg_dblk_, sout, n);
            }
        }
        jmp(l_done, T_NEAR);
        hoisted_idx_.clear();
        hoisted_mask_.clear();
    }

    // The linear prefetch (pf_next) spread over the packed blocks:
    // ceil(lines / max(1, cnt / V)) lines per block.
    void packed_prefetch_step(const Reg64 &cnt, int V) {
        Label l_none;
        cmp(qword[rsp + stk_nx_step], 0);
        je(l_none, T_NEAR);
        mov(reg_tmp2_, cnt);
        shr(reg_tmp2_, ilog2(V));
        mov(rax, ptr[rsp + stk_nx_end]);
        sub(rax, ptr[rsp + stk_nx]);
        prefetch_step();
        L(l_none);
    }

    // Jumps to labels[R] where the call's `count` (rows or columns) is R,
    // 2 .. most, and its packed side's stride `ld` is R * w; else on to
    // l_no.
    void packed_branch(size_t count, const Reg64 &ld, int most,
                       std::vector<Label> &labels, const Label &l_no) {
        if (most < 2)
            return;
        mov(reg_tmp_, ptr[reg_param_ + count]);
        cmp(reg_tmp_, 2);
        jb(l_no, T_NEAR);
        cmp(reg_tmp_, most);
        ja(l_no, T_NEAR);
        imul(reg_tmp2_, reg_tmp_, w_);
        cmp(reg_tmp2_, ld);
        jne(l_no, T_NEAR);
        for (int R = 2; R <= most; ++R) {
            cmp(reg_tmp_, R);
            je(labels[R], T_NEAR);
        }
    }

    // Enters a packed call where the call is one (falls through where not).
    // Padded rows (dst_gaps, dst_ld = P * w): the calls of R columns into
    // rows P apart that transpose_packs_gaps names for this kernel.
    void packed_dispatch(const Label &l_done) {
        std::vector<Label> l_rows(packed_max + 1), l_cols(packed_max + 1);
        // l_gap[P][R]: R columns into rows P apart.
        std::vector<std::vector<Label>> l_gap(packed_max + 1);
        for (auto &v : l_gap)
            v.resize(packed_max + 1);
        const auto gaps = [&](int R, int P) {
            return transpose_packs_gaps(key_, R, P);
        };
        Label l_try_cols, l_try_gaps, l_none;
        packed_branch(offsetof(transpose_call_args, rows), reg_ld_, pk_rows_,
                      l_rows, l_try_cols);
        L(l_try_cols);
        packed_branch(offsetof(transpose_call_args, cols), reg_dld_, pk_cols_,
                      l_cols, l_try_gaps);
        L(l_try_gaps);
        // Rows P apart: R columns with the gaps the caller's (dst_gaps) or
        // kept.
        const auto kept = [&](int R, int P) {
            return transpose_packs_kept_gaps(key_, R, P);
        };
        // Rows at any other dst_ld, at least the row's R elements.
        const auto apart = [&](int R) {
            return transpose_packs_rows_apart(key_, R);
        };
        // Whether some call of rows P apart packs.
        const auto at_pitch = [&](int P) {
            for (int R = 2; R < P; ++R)
                if (gaps(R, P) || kept(R, P))
                    return true;
            return false;
        };
        std::vector<std::vector<Label>> l_kept(packed_max + 1);
        for (auto &v : l_kept)
            v.resize(packed_max + 1);
        std::vector<Label> l_apart(packed_max + 1);
        bool any = false;
        for (int P = 2; P <= packed_max; ++P)
            any = any || apart(P) || at_pitch(P);
        if (any) {
            mov(reg_tmp_,
                ptr[reg_param_ + offsetof(transpose_call_args, cols)]);
            mov(reg_tmp2_,
                ptr[reg_param_ + offsetof(transpose_call_args, dst_gaps)]);
            Label l_try_apart;
            for (int P = 2; P <= packed_max; ++P) {
                if (!at_pitch(P))
                    continue;
                Label l_next, l_kept_p;
                cmp(reg_dld_, P * w_);
                jne(l_next, T_NEAR);
                test(reg_tmp2_, reg_tmp2_);
                jz(l_kept_p, T_NEAR);
                for (int R = 2; R < P; ++R)
                    if (gaps(R, P)) {
                        cmp(reg_tmp_, R);
                        je(l_gap[P][R], T_NEAR);
                    }
                jmp(l_none, T_NEAR);
                L(l_kept_p);
                for (int R = 2; R < P; ++R)
                    if (kept(R, P)) {
                        cmp(reg_tmp_, R);
                        je(l_kept[P][R], T_NEAR);
                    }
                jmp(l_try_apart, T_NEAR);
                L(l_next);
            }
            L(l_try_apart);
            for (int R = 2; R <= packed_max; ++R)
                if (apart(R)) {
                    Label l_other;
                    cmp(reg_tmp_, R);
                    jne(l_other, T_NEAR);
                    cmp(reg_dld_, R * w_);
                    jae(l_apart[R], T_NEAR);
                    jmp(l_none, T_NEAR);
                    L(l_other);
                }
        }
        jmp(l_none, T_NEAR);
        for (int R = 2; R <= pk_rows_; ++R) {
            L(l_rows[R]);
            packed_call(R, true, l_done);
        }
        for (int R = 2; R <= pk_cols_; ++R) {
            L(l_cols[R]);
            packed_call(R, false, l_done);
        }
        for (int P = 2; P <= packed_max; ++P)
            for (int R = 2; R < P; ++R)
                if (gaps(R, P)) {
                    L(l_gap[P][R]);
                    packed_call(R, false, l_done, P);
                }
        for (int P = 2; P <= packed_max; ++P)
            for (int R = 2; R < P; ++R)
                if (kept(R, P)) {
                    L(l_kept[P][R]);
                    packed_call(R, false, l_done, P, dst_rows::kept);
                }
        for (int R = 2; R <= packed_max; ++R)
            if (apart(R)) {
                L(l_apart[R]);
                packed_call(R, false, l_done, transpose_rows_apart_pitch(R),
                            dst_rows::apart);
            }
        L(l_none);
    }

    void emit_constants() {
        for (size_t i = 0; i < consts_.size(); ++i) {
            align(vlen);
            L(*const_labels_[i]);
            for (uint8_t b : consts_[i])
                db(b);
        }
    }

    void generate() {
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        const size_t off_rows = offsetof(transpose_call_args, rows);
        const size_t off_cols = offsetof(transpose_call_args, cols);
        push_saved({ rbx, rbp, r12, r13, r14, r15 });
        sub(rsp, stk_size());
        init_next_prefetch();
        mov(reg_ld_, arg(offsetof(transpose_call_args, src_ld)));
        lea(reg_ld3_, ptr[reg_ld_ + reg_ld_ * 2]);
        mov(reg_dld_, arg(offsetof(transpose_call_args, dst_ld)));
        lea(reg_dld3_, ptr[reg_dld_ + reg_dld_ * 2]);
        mov(reg_sblk_, arg(offsetof(transpose_call_args, src)));
        mov(reg_dblk_, arg(offsetof(transpose_call_args, dst)));
        mov(qword[rsp + stk_c0], 0);
        mov(reg_tmp_, reg_ld_);
        imul(reg_tmp_, reg_tmp_, pf_ahead);
        mov(ptr[rsp + stk_pf_dist], reg_tmp_);

        Label l_cblk, l_rblk, l_rtail, l_ctail, l_done;
        packed_dispatch(l_done);
        if constexpr (is_avx512) {
            if (short_)
                short_rows(l_done);
        } else {
            avx2_short_rows(l_done);
        }
        if (nt_)
            nt_blocks(l_cblk);
        else if (wide_)
            wide_blocks(l_cblk, l_cblk);
        L(l_cblk);
        {
            if_fewer_columns(kc_, l_ctail);
            set_prefetch(kc_);
            xor_(reg_r0_, reg_r0_);
            L(l_rblk);
            mov(reg_tmp_, arg(off_rows));
            sub(reg_tmp_, reg_r0_);
            cmp(reg_tmp_, tr_);
            jb(l_rtail, T_NEAR);
            full_tile();
            add(reg_r0_, tr_);
            jmp(l_rblk, T_NEAR);
            L(l_rtail);
            row_tail_then_next_block();
            jmp(l_cblk, T_NEAR);
        }
        L(l_ctail);
        if constexpr (is_avx512) {
            test(reg_tmp_, reg_tmp_);
            jz(l_done, T_NEAR);
            mov(ptr[rsp + stk_cols], reg_tmp_);
            xor_(reg_r0_, reg_r0_);
            Label l_ct;
            L(l_ct);
            mov(reg_tmp_, arg(off_rows));
            sub(reg_tmp_, reg_r0_);
            mov(reg_tmp2_, tr_);
            cmp(reg_tmp_, reg_tmp2_);
            cmova(reg_tmp_, reg_tmp2_);
            mov(ptr[rsp + stk_rows], reg_tmp_);
            partial_tile();
            add(reg_r0_, tr_);
            cmp(reg_r0_, arg(off_rows));
            jb(l_ct, T_NEAR);
        } else {
            // The columns left (fewer than kc_), where the call has kc_:
            // once more the column block of the last kc_ columns, which
            // stores again, with the same values, the columns it overlaps
            // (row_tail_then_next_block then leaves c0 = cols).
            Label l_scalar;
            test(reg_tmp_, reg_tmp_);
            jz(l_scalar, T_NEAR);
            cmp(qword[reg_param_ + off_cols], kc_);
            jb(l_scalar, T_NEAR);
            neg(reg_tmp_);
            add(reg_tmp_, kc_); // columns to step back
            sub(ptr[rsp + stk_c0], reg_tmp_);
            imul(reg_tmp2_, reg_tmp_, w_);
            sub(reg_dblk_, reg_tmp2_);
            imul(reg_tmp_, reg_ld_);
            sub(reg_sblk_, reg_tmp_);
            jmp(l_cblk, T_NEAR);
            L(l_scalar);
            // All of a call of fewer than kc_ columns (calls of fewer than
            // tr_ rows ran avx2_short_rows).
            scalar_columns_left();
        }
        L(l_done);
        end_vector_code(reg_param_);
        add(rsp, stk_size());
        pop_saved();
        ret();
        emit_constants();
    }

    const int w_, lw_, tr_, nl_, piece_, kc_, groups_;
    const bool nt_; // non-temporal variant
    const int sb_;  // its column block: max(kc_, 64 / w_) columns
    const int kcw_; // columns of a wide tile: n_lanes * nl_
    // The columns of an aligned dst's staged blocks (staged_block) where
    // dst_ld is a multiple of 256 bytes, so that the rows of a band of
    // 128 share at most 64 / 4 of the L1's sets: AVX2 four lines of each
    // row, elsewhere one (sb_). One line of each row streamed
    // the AVX2 f32 dst transposes into rows 8192 to 10240 bytes apart at
    // a third to a half of the speed of four on the Zen 3 guest, 0.8x at
    // 8448, but 1.2-1.4x faster with the rows one to three lines off a
    // multiple of 256 bytes; bytes into rows 2048 apart 2.75x
    // (docs/performance.md).
    const int sb4_ = is_avx512 ? sb_ : 4 * sb_;
    // The columns of a carried block (carried_block): AVX-512 two lines
    // of each row (2 * sb_), AVX2 four where they are at most
    // transpose_carry_cols columns (4- and 8-byte elements), two
    // otherwise. Into L12's dst rows (8188 bytes apart), 4 lines a row
    // took the AVX2 f32 dst transposes 0.72x the time of 2 (mid-chain
    // strips, Zen 3; 1 line: 1.5x), and 0.89x with rows 8252 bytes apart
    // (docs/performance.md).
    // Bytes, both ISAs: one line (sb_ = 64 columns), so that a block
    // divides the chain's granule of transpose_carry_cols columns.
    const int cb_ =
            w_ == 1 ? sb_
            : is_avx512
                    ? 2 * sb_
                    : std::max(2 * sb_,
                               std::min(256 / w_, int(transpose_carry_cols)));
    const bool wide_;
    // The most rows of a call that runs one row per 16-byte lane (0:
    // none). AVX-512 (short_rows): a lane's 16 / w rows of 1- and 2-byte
    // elements, 2 rows of 4-byte ones (3 and 4 rows of 4 bytes ran
    // 0.85-0.91x the register tiles from L2, docs/performance.md). AVX2
    // (avx2_short_rows' wide tiles): 16 rows of bytes (1.6-2.1x the
    // register tiles from L2; 4 to 8 rows of 2-byte elements ran
    // 0.69-0.98x there).
    const int short_max_ = !is_avx512 ? (w_ == 1 ? lane_bytes : 0)
                           : w_ <= 2  ? lane_bytes / w_
                           : w_ == 4  ? 2
                                      : 0;
    const bool short_ = short_max_ > 0;
    bool wide_perm_ = false;    // plan_wide()
    std::vector<int> wide_out_; // the network's output registers
    std::vector<unpack_op> ops_, wops_;
    std::vector<std::pair<int, int>> wrow_; // (register, lane) of each row
    std::vector<piece> pieces_;
    bool pair_pieces_ = false;               // plan_network(): store_pieces
    std::vector<std::pair<int, int>> upper_; // (register, spare xmm)
    const int stk_pk = stk_pk_at();
    // Packed calls: the most rows and columns (at most packed_max).
    const int pk_rows_, pk_cols_;
    // Lines whole through a carry (carried_block): the non-temporal
    // variant, whose rows' offsets within a line are multiples of g_ =
    // min(w, 4) bytes; AVX-512 for 2-, 4- and 8-byte elements (its joins
    // permute words or dwords) and for bytes where the CPU has
    // AVX512_VBMI (vpermi2b), AVX2 for all (its joins shift off the
    // dwords where they must).
    const bool carry_ok_;
    const int g_;
    // AVX512_VBMI: permuted() moves 1-byte elements by vpermi2b.
    const bool vbmi_;
    // hoist_constants: permuted() notes its constants (collect_), and the
    // registers that hold them for the packed call being emitted.
    bool collect_ = false;
    std::vector<std::vector<uint8_t>> collected_idx_, collected_mask_;
    std::vector<std::pair<std::vector<uint8_t>, int>> hoisted_idx_,
            hoisted_mask_;
    std::vector<std::vector<uint8_t>> consts_;
    std::vector<std::unique_ptr<Label>> const_labels_;
};

// transpose_key::packed_lines: 0 .. 8.
constexpr int packed_slots = 9;

} // namespace

std::shared_ptr<const transpose_kernel>
create_jit_transpose_kernel(const transpose_key &key) {
    const bool w_ok = key.elem_size == 1 || key.elem_size == 2
                      || key.elem_size == 4 || key.elem_size == 8;
    if (!w_ok || key.packed_lines >= packed_slots)
        fail(status::unimplemented, "Select JIT: no transpose kernel for ",
             transpose_kernel_name(key));
    switch (key.isa) {
        case kernel_isa::avx512_core:
            return make_jit_kernel<
                    jit_transpose_t<kernel_isa::avx512_core, Zmm>>(key);
        case kernel_isa::avx2:
            return make_jit_kernel<jit_transpose_t<kernel_isa::avx2, Ymm>>(key);
        default: break;
    }
    fail(status::unimplemented, "Select JIT: no transpose kernel for ",
         transpose_kernel_name(key));
}

const transpose_kernel *get_transpose_kernel(const transpose_key &key) {
    if (key.isa == kernel_isa::ref)
        return nullptr;
    int wi = -1;
    switch (key.elem_size) {
        case 1: wi = 0; break;
        case 2: wi = 1; break;
        case 4: wi = 2; break;
        case 8: wi = 3; break;
        default: break;
    }
    const int ii = key.isa == kernel_isa::avx512_core ? 0
                   : key.isa == kernel_isa::avx2      ? 1
                                                      : -1;
    if (wi < 0 || ii < 0) {
        (void)create_jit_transpose_kernel(key); // throws: no such kernel
        return nullptr;
    }
    const int ni = key.nt_stores ? 1 : 0;
    const int pi = key.packed_lines;
    if (pi >= packed_slots) {
        (void)create_jit_transpose_kernel(key); // throws: no such kernel
        return nullptr;
    }
    static std::once_flag once[2][4][2][packed_slots];
    static std::shared_ptr<const transpose_kernel> table[2][4][2][packed_slots];
    std::call_once(once[ii][wi][ni][pi], [&] {
        table[ii][wi][ni][pi] = create_jit_transpose_kernel(key);
    });
    return table[ii][wi][ni][pi].get();
}

} // namespace impl
} // namespace selgraph
