// Xbyak generators of the Select kernels that write a transposed dst of a
// few rows (kernel_key::dt_cols; ABI: select_kernel.hpp) or interleave a
// few rows into dst (kernel_key::dt_rows): AVX-512 with 2-, 4- and 8-byte
// elements; AVX2 (below) by vpermd for 4- and 8-byte elements into a
// transposed dst, by whole 16-byte lanes for 4-byte ones of 4, 8 or 12
// channels, and by 16-byte lanes for 1- and 2-byte ones and the
// interleaving direction (1-byte elements on AVX-512 CPUs too). Both ISAs
// move whole lanes for 4-byte elements of 4, 8 or 12 lines, in both
// directions; AVX2 moves a pixel's quads of 4 channels as quadwords of
// 2-byte elements (8 to 15 lines; interleaving, 8 to 15 rows and every
// multiple of 4 up to 28) and as dwords of 1-byte ones (8 lines, both
// directions; 11 to 63 lines through the stack).
//
// The case: channels-last inputs of a few channels into a channels-first
// dst (an RGB image [N, 3, H, W] stored NHWC, written NCHW). Folded in the
// inputs' order, each row holds the c channels of one pixel and the rows
// lie back to back, so a block of L pixels (L = 64 / element bytes, one
// vector) is c whole vectors of each input, the channels interleaved. The
// block kernel (jit_select_dt.cpp) needs 16 columns; the scratch path
// transposes a few lines of the scratch per pixel block after the row
// kernel wrote them. This kernel does it in one pass:
//
//   for each block of L rows:
//     c vectors m: vptestmb of cond's L bytes, vpblendm{w,d,q} between
//     src_1's vector and src_0's (interleaved: element e is channel e % c
//     of row e / c);
//     for each channel ch: its L elements are e = ch + c * j, j < L,
//     gathered by vpermi2{w,d,q} from the vector pairs (2p, 2p + 1) that
//     hold them, pairs after the first merged under a mask of their lanes;
//     stored as one 64-byte piece of dst line ch;
//     4-byte elements of 4, 8 or 12 channels instead: whole 16-byte lanes
//     (a pixel's quad of channels) gathered by vshufi32x4, then 4 x 4
//     transposes within the lanes (quad_lines).
//
// An input whose rows all read one row (stride 0: a per-channel cond or
// source over the pixels, a 0-D src_1) is expanded once per call into c
// interleaved vectors on the stack (vperm{w,d,q} of the row by
// (L * m + i) % c), and read from there with a stride of 0.
//
// Tails: the last rows' c * rows elements are loaded under opmasks (no
// byte past an input is read) and their dst pieces stored under a mask of
// the rows. Non-temporal variant: the full blocks' pieces are streamed;
// the caller guarantees dst and dst_stride are multiples of 64 bytes.
//
// Against the scratch path on the 2-vCPU Intel Xeon guest, an intrinsics
// model of this loop (f32, 3 channels, [16, 3, 224, 224]) ran at 1.55x its
// speed with streamed stores, 0.84 of the dense Select (docs/performance.md).
//
// Prefetch (kernel_key::dt_prefetch, AVX-512's kernels, both directions):
// a block of many channels is a long run of permutes after its loads, and
// from DRAM the next block's loads waited on it. While 8 more blocks
// follow, each block prefetches (prefetcht0) the input lines of the block
// 8 on. On the Zen 5 guest, 1 thread, 32 images of 12544 pixels from
// DRAM: f32 of 7 to 15 channels ran 1.8-5x as fast (12 channels 3.7 ms
// -> 1.4), bf16 of 10 and more 1.6-3x; in the layout suite from DRAM L16
// (3 channels) 1.1-1.3x and L18 (12) 1.8-2.1x, from the caches L18 f32
// 2.5x and the rest within noise; the interleaving kernel (below), 32
// images from DRAM, f32 of 8 to 15 rows 1.7-2.4x as fast, in the L3
// within noise (docs/performance.md). The dispatcher picks it per CPU
// (cpu_tuning).
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include <xbyak/xbyak.h>

#include "jit_generator.hpp"
#include "jit_lanes.hpp"
#include "jit_select.hpp"
#include "src/common.hpp"

namespace selgraph {
namespace impl {

namespace {

using namespace Xbyak;

// What the packed kernels share: the element size, the argument and
// operand registers, and the kernel's outline (generate(): the frame with
// the callee-saved registers, the stack block, the operands' pointers, the
// body, the fence and return, the tables after the code).
class jit_packed_base : public jit_generator<select_kernel> {
protected:
    explicit jit_packed_base(const kernel_key &key)
        : jit_generator(key, 16384)
        , es_(key.elem_size) {}
    virtual ~jit_packed_base() = default;

    const Reg64 reg_param_ = rdi;
    const Reg64 reg_pc_ = r8; // cond, src_0, src_1, dst at the block
    const Reg64 reg_pa_ = r9;
    const Reg64 reg_pb_ = r10;
    const Reg64 reg_pd_ = r11;
    const Reg64 reg_tbl_ = rbx; // the tables after the code

    // A field of the call's select_call_args.
    Address arg(size_t off) const { return ptr[reg_param_ + off]; }

    // The kernel: frame() bytes of stack, the table's address in reg_tbl_,
    // the operands' pointers, body(), and emit_tables() after the code.
    // Called by the most derived constructor, then ready().
    void generate() {
        enter(frame());
        Label l_tbl;
        lea(reg_tbl_, ptr[rip + l_tbl]);
        mov(reg_pc_, arg(offsetof(select_call_args, cond)));
        mov(reg_pa_, arg(offsetof(select_call_args, src0)));
        mov(reg_pb_, arg(offsetof(select_call_args, src1)));
        mov(reg_pd_, arg(offsetof(select_call_args, dst)));
        body();
        leave(reg_param_);

        align(64);
        L(l_tbl);
        emit_tables();
    }
    virtual int64_t frame() const = 0;
    virtual void body() = 0;
    virtual void emit_tables() = 0;

    // rbx, rbp, r12-r15 saved, then `frame` bytes of stack (a multiple
    // of 16) below them, rsp 16-byte aligned (the return address and the
    // registers saved leave it 8 bytes off).
    void enter(int64_t frame) {
        push_saved({ rbx, rbp, r12, r13, r14, r15 });
        frame_ = frame + 8;
        sub(rsp, frame_);
    }
    // The nt variant's sfence where the call asks for it, then back.
    void leave(const Reg64 &param) {
        end_vector_code(param);
        add(rsp, frame_);
        pop_saved();
        ret();
    }

    // A 4 x 4 transpose of dwords within each 16-byte lane of v[0..3], in
    // place (element k of a lane of v[i] becomes element i of that lane of
    // v[k]), through u[0..3]: the quads of 4-byte elements that the packed
    // kernels move as whole lanes (4, 8 or 12 lines).
    template <typename Vmm>
    void transpose_dwords_in_lanes(const Vmm (&v)[4], const Vmm (&u)[4]) {
        vpunpckldq(u[0], v[0], v[1]);
        vpunpckhdq(u[1], v[0], v[1]);
        vpunpckldq(u[2], v[2], v[3]);
        vpunpckhdq(u[3], v[2], v[3]);
        vpunpcklqdq(v[0], u[0], u[2]);
        vpunpckhqdq(v[1], u[0], u[2]);
        vpunpcklqdq(v[2], u[1], u[3]);
        vpunpckhqdq(v[3], u[1], u[3]);
    }

    // transpose_dwords_in_lanes of each group of 4 rows 4q .. 4q + 3 of
    // registers 0 .. 4a - 1 (the lines of a = c / 4 quads), in place,
    // through u.
    template <typename Vmm>
    void transpose_row_quads(int a, const Vmm (&u)[4]) {
        for (int q = 0; q < a; ++q)
            transpose_dwords_in_lanes({ Vmm(4 * q), Vmm(4 * q + 1),
                                        Vmm(4 * q + 2), Vmm(4 * q + 3) },
                                      u);
    }

    // The vpshufb table of 1-byte quads (32 bytes): in each lane's 4 x 4
    // bytes, byte 4k + j from byte 4j + k (pixels by channels into
    // channels by pixels, and back).
    void emit_byte_quad_shuffle() {
        for (int half = 0; half < 2; ++half)
            for (int k = 0; k < 4; ++k)
                for (int j = 0; j < 4; ++j)
                    db(static_cast<uint8_t>(4 * j + k));
    }

    // After transpose_dwords_in_lanes of each group of 4 lines (channels)
    // 4q .. 4q + 3 of a = c / 4 groups: where quad Q of the interleaved
    // block (column Q / a, group Q % a) lies, as {line register, lane}.
    static std::pair<int, int> quad_at(int q, int a) {
        const int col = q / a;
        return { 4 * (q % a) + col % 4, col / 4 };
    }

    const int es_;

private:
    int64_t frame_ = 8;
};

// AVX-512: one vector's lanes of the element size, and its instructions.
class jit_packed_avx512_base : public jit_packed_base {
protected:
    explicit jit_packed_avx512_base(const kernel_key &key)
        : jit_packed_base(key)
        , lanes_(64 / key.elem_size) {}

    // Blocks ahead whose input lines a block prefetches (kernel_key::
    // dt_prefetch).
    static constexpr int pf_blocks = 8;

    // The full blocks of a call, `left` (rows or columns) counting down by
    // L: with the key's prefetch, first while pf_blocks more blocks follow
    // (so that no prefetch reaches past the call), then while one block
    // remains; `step(pf)` runs a block (prefetching where `pf`) and moves
    // the pointers on. Falls through to the tail.
    template <typename Step>
    void full_blocks(const Reg64 &left, Step step) {
        for (const bool pf : { true, false }) {
            if (pf && !key_.dt_prefetch)
                continue;
            Label l_loop, l_done;
            L(l_loop);
            cmp(left, lanes_ * (pf ? 1 + pf_blocks : 1));
            jb(l_done, T_NEAR);
            step(pf);
            sub(left, lanes_);
            jmp(l_loop, T_NEAR);
            L(l_done);
        }
    }

    // k = the low clamp(elems - L * m, 0, L) lanes: those of vector m of a
    // tail block of `elems` elements (v and t clobbered).
    void vector_tail_mask(const Opmask &k, const Reg64 &elems, int m,
                          const Reg64 &v, const Reg64 &t) {
        Label l_pos, l_set;
        mov(v, elems);
        sub(v, lanes_ * m);
        jg(l_pos, T_NEAR);
        xor_(v, v);
        L(l_pos);
        cmp(v, lanes_);
        jbe(l_set, T_NEAR);
        mov(v, lanes_);
        L(l_set);
        mov(t, uint64_t(-1));
        bzhi(t, t, v);
        kmovq(k, t);
    }

    void emit_lane(int v) {
        switch (es_) {
            case 2: dw(static_cast<uint16_t>(v)); break;
            case 4: dd(static_cast<uint32_t>(v)); break;
            default: dq(static_cast<uint64_t>(v)); break;
        }
    }
    void kmov_lanes(const Opmask &k, const Reg64 &r) {
        if (es_ == 2)
            kmovd(k, r.cvt32());
        else if (es_ == 4)
            kmovw(k, r.cvt32());
        else
            kmovb(k, r.cvt32());
    }
    void kmov_lanes(const Opmask &k, const Address &a) {
        if (es_ == 2)
            kmovd(k, a);
        else if (es_ == 4)
            kmovw(k, a);
        else
            kmovb(k, a);
    }
    void load_vec(const Zmm &z, const Address &a) {
        if (es_ == 2)
            vmovdqu16(z, a);
        else if (es_ == 4)
            vmovdqu32(z, a);
        else
            vmovdqu64(z, a);
    }
    void load_vec_masked(const Zmm &z, const Opmask &k, const Address &a) {
        if (es_ == 2)
            vmovdqu16(z | k | T_z, a);
        else if (es_ == 4)
            vmovdqu32(z | k | T_z, a);
        else
            vmovdqu64(z | k | T_z, a);
    }
    void store_vec_masked(const Address &a, const Opmask &k, const Zmm &z) {
        if (es_ == 2)
            vmovdqu16(a | k, z);
        else if (es_ == 4)
            vmovdqu32(a | k, z);
        else
            vmovdqu64(a | k, z);
    }
    void bcast(const Zmm &z, const Address &a) {
        if (es_ == 2)
            vpbroadcastw(z, a);
        else if (es_ == 4)
            vpbroadcastd(z, a);
        else
            vpbroadcastq(z, a);
    }
    void blend(const Zmm &d, const Opmask &k, const Zmm &a, const Operand &b) {
        if (es_ == 2)
            vpblendmw(d | k, a, b);
        else if (es_ == 4)
            vpblendmd(d | k, a, b);
        else
            vpblendmq(d | k, a, b);
    }
    void perm2(const Zmm &idx_dst, const Zmm &a, const Zmm &b) {
        if (es_ == 2)
            vpermi2w(idx_dst, a, b);
        else if (es_ == 4)
            vpermi2d(idx_dst, a, b);
        else
            vpermi2q(idx_dst, a, b);
    }
    void perm1(const Zmm &d, const Zmm &idx, const Zmm &a) {
        if (es_ == 2)
            vpermw(d, idx, a);
        else if (es_ == 4)
            vpermd(d, idx, a);
        else
            vpermq(d, idx, a);
    }
    void move_masked(const Zmm &d, const Opmask &k, const Zmm &s) {
        if (es_ == 2)
            vmovdqu16(d | k, s);
        else if (es_ == 4)
            vmovdqu32(d | k, s);
        else
            vmovdqu64(d | k, s);
    }

    const int lanes_;
};

class jit_select_dt_packed_t : public jit_packed_avx512_base {
public:
    explicit jit_select_dt_packed_t(const kernel_key &key)
        : jit_packed_avx512_base(key)
        , c_(key.dt_cols)
        , pairs_((key.dt_cols + 1) / 2) {
        generate();
        ready();
    }

private:
    // reg_pd_: dst at the current block's first row.
    const Reg64 reg_rows_ = rcx;
    const Reg64 reg_ic_ = r12; // bytes from block to block per input
    const Reg64 reg_ia_ = r13;
    const Reg64 reg_ib_ = r14;
    const Reg64 reg_ld_ = r15; // dst bytes between lines (channels)
    const Reg64 reg_q_ = rbp;  // dst line pointer
    const Reg64 reg_t_ = rax;
    const Reg64 reg_u_ = rdx;
    const Reg64 reg_v_ = rsi;
    const Opmask k_sel_ = k1, k_lane_ = k2, k_rows_ = k3;
    const Opmask k_tail0_ = k4; // tail: lanes of the vector being loaded

    static Zmm vec(int m) { return Zmm(m); }
    const Zmm z_out_ = zmm16, z_t_ = zmm17, z_b_ = zmm18, z_row_ = zmm19;
    const Xmm x_cond_ = xmm20;

    // Stack: the expanded blocks of inputs read with a stride of 0.
    int64_t cond_off() const { return 0; }
    int64_t src_off(int op) const {
        return round64(c_ * lanes_) + (op - 1) * 64 * c_;
    }
    int64_t frame() const override { return src_off(2) + 64 * c_; }
    static int64_t round64(int64_t v) { return (v + 63) / 64 * 64; }

    // The data after the code: expansion indices (c vectors: lane i of
    // vector m is (L * m + i) % c), gather indices (c * pairs vectors:
    // lane j of channel ch, pair p is ch + c * j - 2 * L * p where that
    // lies in the pair, else 0) and the pairs' lane masks (c * pairs
    // qwords).
    int64_t expand_tbl(int m) const { return 64 * m; }
    int64_t gather_tbl(int line, int p) const {
        return 64 * (c_ + line * pairs_ + p);
    }
    int64_t mask_tbl(int line, int p) const {
        return 64 * (c_ + c_ * pairs_) + 8 * (line * pairs_ + p);
    }

    void emit_tables() override {
        for (int m = 0; m < c_; ++m)
            for (int i = 0; i < lanes_; ++i)
                emit_lane((lanes_ * m + i) % c_);
        if (quads()) // quad_lines reads no gather table
            return;
        for (int line = 0; line < c_; ++line)
            for (int p = 0; p < pairs_; ++p)
                for (int j = 0; j < lanes_; ++j) {
                    const int e = line + c_ * j - 2 * lanes_ * p;
                    emit_lane(e >= 0 && e < 2 * lanes_ ? e : 0);
                }
        for (int line = 0; line < c_; ++line)
            for (int p = 0; p < pairs_; ++p) {
                uint64_t mask = 0;
                for (int j = 0; j < lanes_; ++j) {
                    const int e = line + c_ * j - 2 * lanes_ * p;
                    if (e >= 0 && e < 2 * lanes_)
                        mask |= uint64_t(1) << j;
                }
                dq(mask);
            }
    }
    // L cond bytes of vector m (masked by k_tail0_ in a tail).
    void load_cond(const Address &a, bool tail) {
        if (tail && es_ == 2)
            vmovdqu8(Ymm(x_cond_.getIdx()) | k_tail0_ | T_z, a);
        else if (tail)
            vmovdqu8(x_cond_ | k_tail0_ | T_z, a);
        else if (es_ == 8)
            vmovq(x_cond_, a);
        else if (es_ == 4)
            vmovdqu8(x_cond_, a);
        else
            vmovdqu8(Ymm(x_cond_.getIdx()), a);
    }
    void test_cond(const Opmask &k) {
        const Xmm x = x_cond_;
        const Ymm y = Ymm(x_cond_.getIdx());
        if (key_.invert_cond) {
            if (es_ == 2)
                vptestnmb(k, y, y);
            else
                vptestnmb(k, x, x);
        } else {
            if (es_ == 2)
                vptestmb(k, y, y);
            else
                vptestmb(k, x, x);
        }
    }

    // One block of L rows (tail: reg_rows_ < L rows, > 0); with `pf`, the
    // lines of each input's block pf_blocks on, which the caller keeps
    // inside the rows of the call.
    void block(bool tail, bool pf = false) {
        if (pf) {
            const int cond_lines = (lanes_ * c_ + 63) / 64;
            for (int j = 0; j < cond_lines; ++j)
                prefetcht0(ptr[reg_pc_ + reg_ic_ * pf_blocks + 64 * j]);
            for (int j = 0; j < c_; ++j) {
                prefetcht0(ptr[reg_pa_ + reg_ia_ * pf_blocks + 64 * j]);
                if (!key_.src1_scalar)
                    prefetcht0(ptr[reg_pb_ + reg_ib_ * pf_blocks + 64 * j]);
            }
        }
        if (tail) {
            // Elements of the block: rows * c.
            imul(reg_u_, reg_rows_, c_);
        }
        for (int m = 0; m < c_; ++m) {
            if (tail)
                vector_tail_mask(k_tail0_, reg_u_, m, reg_v_, reg_t_);
            const int64_t cb = static_cast<int64_t>(lanes_) * m;
            load_cond(ptr[reg_pc_ + cb], tail);
            test_cond(k_sel_);
            if (tail)
                kandq(k_sel_, k_sel_, k_tail0_);
            if (!key_.src1_scalar) {
                if (tail)
                    load_vec_masked(vec(m), k_tail0_, ptr[reg_pb_ + 64 * m]);
                else
                    load_vec(vec(m), ptr[reg_pb_ + 64 * m]);
            }
            // Lanes past the rows are off in k_sel_: never loaded.
            blend(vec(m), k_sel_, key_.src1_scalar ? z_b_ : vec(m),
                  ptr[reg_pa_ + 64 * m]);
        }
        mov(reg_q_, reg_pd_);
        if (quads()) {
            quad_lines(tail);
            return;
        }
        for (int line = 0; line < c_; ++line) {
            for (int p = 0; p < pairs_; ++p) {
                const Zmm d = p == 0 ? z_out_ : z_t_;
                vmovdqu64(d, ptr[reg_tbl_ + gather_tbl(line, p)]);
                perm2(d, vec(2 * p), vec(std::min(2 * p + 1, c_ - 1)));
                if (p > 0) {
                    kmov_lanes(k_lane_, ptr[reg_tbl_ + mask_tbl(line, p)]);
                    move_masked(z_out_, k_lane_, z_t_);
                }
            }
            store_line(z_out_, line, tail);
        }
    }

    // dst line `line`'s piece of the block, from `z`; reg_q_ then at the
    // next line's.
    void store_line(const Zmm &z, int line, bool tail) {
        if (tail)
            store_vec_masked(ptr[reg_q_], k_rows_, z);
        else if (key_.nt_stores)
            vmovntdq(ptr[reg_q_], z);
        else
            vmovdqu64(ptr[reg_q_], z);
        if (line + 1 < c_)
            add(reg_q_, reg_ld_);
    }

    // 4-byte elements of c = 4a channels (4, 8 and 12): each 16-byte lane
    // of the block's c selected vectors holds one pixel's quad q of
    // channels 4q .. 4q + 3 (vector m, lane l: pixel (4m + l) / a, quad
    // (4m + l) % a). For each q, four vectors y_j (j < 4) take as lane g
    // pixel 4g + j's quad q, which vector a * g + (a * j + q) / 4 holds in
    // its lane (a * j + q) % 4 for every g: two vshufi32x4 pick that lane
    // of four vectors, a third joins them. A 4 x 4 transpose within the
    // lanes (vpunpck{l,h}dq, then vpunpck{l,h}qdq) then leaves the 16
    // pixels of channel 4q + k in one vector. 20 shuffles per 4 channels,
    // with no table: the gathers by pairs (vpermi2d) took 6 permutes, 6
    // index loads and 5 masked merges per channel of 12, and ran L18's
    // kernel at about a cycle an element from L2 (docs/performance.md).
    bool quads() const { return es_ == 4 && c_ % 4 == 0; }
    void quad_lines(bool tail) {
        const int a = c_ / 4;
        const Zmm t1(21), t2(22);
        const Zmm y[4] = { Zmm(23), Zmm(24), Zmm(25), Zmm(26) };
        const Zmm u[4] = { Zmm(27), Zmm(28), Zmm(29), Zmm(30) };
        for (int q = 0; q < a; ++q) {
            for (int j = 0; j < 4; ++j) {
                const int v0 = (a * j + q) / 4, l = (a * j + q) % 4;
                const auto lane =
                        static_cast<uint8_t>(l | l << 2 | l << 4 | l << 6);
                vshufi32x4(t1, vec(v0), vec(a + v0), lane);
                vshufi32x4(t2, vec(2 * a + v0), vec(3 * a + v0), lane);
                // Lanes 0 and 2 of t1, then of t2.
                vshufi32x4(y[j], t1, t2, 0x88);
            }
            transpose_dwords_in_lanes(y, u);
            for (int k = 0; k < 4; ++k)
                store_line(y[k], 4 * q + k, tail);
        }
    }

    // An input read with a stride of 0: its row (at `row`, w bytes per
    // element, masked to c elements) expanded into c vectors at the stack
    // offset `off` (cond: L bytes per vector, as 0/1 bytes of its test).
    void expand_source(const Reg64 &row, int64_t off) {
        mov(reg_t_, (uint64_t(1) << c_) - 1);
        kmov_lanes(k_lane_, reg_t_);
        load_vec_masked(z_row_, k_lane_, ptr[row]);
        for (int m = 0; m < c_; ++m) {
            vmovdqu64(z_t_, ptr[reg_tbl_ + expand_tbl(m)]);
            perm1(z_out_, z_t_, z_row_);
            vmovdqu64(ptr[rsp + off + 64 * m], z_out_);
        }
    }
    void expand_cond(const Reg64 &row) {
        mov(reg_t_, (uint64_t(1) << c_) - 1);
        kmovq(k_lane_, reg_t_);
        vmovdqu8(x_cond_ | k_lane_ | T_z, ptr[row]);
        // The c bytes widened to lanes, so that vperm can repeat them.
        if (es_ == 2)
            vpmovzxbw(z_row_, Ymm(x_cond_.getIdx()));
        else if (es_ == 4)
            vpmovzxbd(z_row_, x_cond_);
        else
            vpmovzxbq(z_row_, x_cond_);
        for (int m = 0; m < c_; ++m) {
            vmovdqu64(z_t_, ptr[reg_tbl_ + expand_tbl(m)]);
            perm1(z_out_, z_t_, z_row_);
            // Nonzero lanes -> bytes of 1 (the test in the block reads
            // them as cond bytes, inverted or not).
            if (es_ == 2)
                vptestmw(k_lane_, z_out_, z_out_);
            else if (es_ == 4)
                vptestmd(k_lane_, z_out_, z_out_);
            else
                vptestmq(k_lane_, z_out_, z_out_);
            vpmovm2b(Ymm(z_out_.getIdx()), k_lane_);
            if (es_ == 2)
                vmovdqu8(ptr[rsp + cond_off() + lanes_ * m],
                         Ymm(z_out_.getIdx()));
            else if (es_ == 4)
                vmovdqu8(ptr[rsp + cond_off() + lanes_ * m],
                         Xmm(z_out_.getIdx()));
            else
                vmovq(ptr[rsp + cond_off() + lanes_ * m], Xmm(z_out_.getIdx()));
        }
    }

    void body() override {
        mov(reg_rows_, arg(offsetof(select_call_args, rows)));
        mov(reg_ld_, arg(offsetof(select_call_args, dst_stride)));

        // Per input: the bytes from block to block (L rows), or, for a
        // stride of 0, its expanded block on the stack and 0.
        const int shift = es_ == 2 ? 5 : es_ == 4 ? 4 : 3; // log2(L)
        struct in_t {
            Reg64 p, inc;
            size_t stride_off;
            int op;
        };
        const in_t ins[] = {
            { reg_pc_, reg_ic_, offsetof(select_call_args, cond_stride), 0 },
            { reg_pa_, reg_ia_, offsetof(select_call_args, src0_stride), 1 },
            { reg_pb_, reg_ib_, offsetof(select_call_args, src1_stride), 2 },
        };
        for (const in_t &in : ins) {
            if (in.op == 2 && key_.src1_scalar) {
                // One element for every row (the dispatcher passes only
                // a stride of 0).
                bcast(z_b_, ptr[reg_pb_]);
                xor_(in.inc, in.inc);
                continue;
            }
            Label l_strided, l_done;
            mov(in.inc, arg(in.stride_off));
            test(in.inc, in.inc);
            jnz(l_strided, T_NEAR);
            if (in.op == 0) {
                expand_cond(in.p);
                lea(in.p, ptr[rsp + cond_off()]);
            } else {
                expand_source(in.p, src_off(in.op));
                lea(in.p, ptr[rsp + src_off(in.op)]);
            }
            jmp(l_done, T_NEAR);
            L(l_strided);
            shl(in.inc, shift);
            L(l_done);
        }

        // (An input of one row for all, increment 0, prefetches its own
        // block on the stack.)
        full_blocks(reg_rows_, [&](bool pf) {
            block(false, pf);
            add(reg_pc_, reg_ic_);
            add(reg_pa_, reg_ia_);
            add(reg_pb_, reg_ib_);
            add(reg_pd_, 64);
        });

        Label l_end;
        test(reg_rows_, reg_rows_);
        jz(l_end, T_NEAR);
        mov(reg_t_, uint64_t(-1));
        bzhi(reg_t_, reg_t_, reg_rows_);
        kmovq(k_rows_, reg_t_);
        block(true);

        L(l_end);
    }

    const int c_, pairs_;
};

// The mirror case, AVX-512 (kernel_key::dt_rows): tiles of c rows (2 to 15)
// whose dst holds each column's c elements back to back, so a few channels
// of channels-first inputs written into a channels-last dst (an RGB image
// stored NCHW, written NHWC). For each block of L columns (pixels): each
// row's L elements selected into a vector (cond and either source may be
// one element per row, broadcast), then each of the c output vectors of the
// block's c * L interleaved dst elements (element e: row e % c, column
// e / c) gathered from the row pairs that hold them with vpermi2{w,d,q},
// merged under masks, and stored (streamed in the `_nt` variant, whose
// calls get a dst that starts a cache line: each block is c whole lines).
// Tails: the last columns loaded under opmasks and the c * columns dst
// elements stored under masks.
class jit_select_dt_interleave_t : public jit_packed_avx512_base {
public:
    explicit jit_select_dt_interleave_t(const kernel_key &key)
        : jit_packed_avx512_base(key)
        , c_(key.dt_rows)
        , pairs_((key.dt_rows + 1) / 2) {
        generate();
        ready();
    }

private:
    // reg_pc_, reg_pa_, reg_pb_: row 0 of each input at the current block.
    const Reg64 reg_n_ = rcx;  // columns left
    const Reg64 reg_cs_ = r12; // bytes between rows
    const Reg64 reg_as_ = r13;
    const Reg64 reg_bs_ = r14;
    const Reg64 reg_tc_ = r15; // row pointers within a block
    const Reg64 reg_ta_ = rbp;
    const Reg64 reg_tb_ = rax;
    const Reg64 reg_u_ = rdx;
    const Reg64 reg_v_ = rsi;
    const Opmask k_sel_ = k1, k_lane_ = k2, k_cols_ = k3, k_out_ = k4;

    static Zmm vec(int r) { return Zmm(r); }
    const Zmm z_out_ = zmm16, z_t_ = zmm17, z_a_ = zmm18;
    const Xmm x_cond_ = xmm20;

    // Gather indices (c * pairs vectors: lane i of output vector m, pair
    // p is e / c + L * (e % c - 2 * p) for e = L * m + i where e % c is a
    // row of the pair, else 0) and the pairs' lane masks (qwords).
    int64_t gather_tbl(int m, int p) const { return 64 * (m * pairs_ + p); }
    int64_t mask_tbl(int m, int p) const {
        return 64 * c_ * pairs_ + 8 * (m * pairs_ + p);
    }
    void emit_tables() override {
        if (quads()) // quad_vectors reads no table
            return;
        for (int m = 0; m < c_; ++m)
            for (int p = 0; p < pairs_; ++p)
                for (int i = 0; i < lanes_; ++i) {
                    const int e = lanes_ * m + i, r = e % c_;
                    const int v =
                            r / 2 == p ? e / c_ + lanes_ * (r - 2 * p) : 0;
                    emit_lane(v);
                }
        for (int m = 0; m < c_; ++m)
            for (int p = 0; p < pairs_; ++p) {
                uint64_t mask = 0;
                for (int i = 0; i < lanes_; ++i)
                    if ((lanes_ * m + i) % c_ / 2 == p)
                        mask |= uint64_t(1) << i;
                dq(mask);
            }
    }

    // One block of L columns (tail: reg_n_ < L columns, > 0); with `pf`,
    // each row's input lines pf_blocks blocks on, which the caller keeps
    // inside the columns of the call.
    void block(bool tail, bool pf = false) {
        mov(reg_tc_, reg_pc_);
        mov(reg_ta_, reg_pa_);
        mov(reg_tb_, reg_pb_);
        const Ymm yc = Ymm(x_cond_.getIdx());
        for (int r = 0; r < c_; ++r) {
            if (pf) {
                if (!key_.cond_scalar)
                    prefetcht0(ptr[reg_tc_ + lanes_ * pf_blocks]);
                if (!key_.src0_scalar)
                    prefetcht0(ptr[reg_ta_ + 64 * pf_blocks]);
                if (!key_.src1_scalar)
                    prefetcht0(ptr[reg_tb_ + 64 * pf_blocks]);
            }
            if (key_.cond_scalar)
                vpbroadcastb(yc, ptr[reg_tc_]);
            else if (tail && es_ == 2)
                vmovdqu8(yc | k_cols_ | T_z, ptr[reg_tc_]);
            else if (tail)
                vmovdqu8(x_cond_ | k_cols_ | T_z, ptr[reg_tc_]);
            else if (es_ == 2)
                vmovdqu8(yc, ptr[reg_tc_]);
            else if (es_ == 4)
                vmovdqu8(x_cond_, ptr[reg_tc_]);
            else
                vmovq(x_cond_, ptr[reg_tc_]);
            if (key_.invert_cond)
                vptestnmb(k_sel_, yc, yc);
            else
                vptestmb(k_sel_, yc, yc);
            if (tail)
                kandq(k_sel_, k_sel_, k_cols_);
            if (key_.src1_scalar)
                bcast(vec(r), ptr[reg_tb_]);
            else if (tail)
                load_vec_masked(vec(r), k_cols_, ptr[reg_tb_]);
            else
                load_vec(vec(r), ptr[reg_tb_]);
            if (key_.src0_scalar) {
                bcast(z_a_, ptr[reg_ta_]);
                blend(vec(r), k_sel_, vec(r), z_a_);
            } else {
                // Lanes past the columns are off in k_sel_: never loaded.
                blend(vec(r), k_sel_, vec(r), ptr[reg_ta_]);
            }
            if (r + 1 < c_) {
                add(reg_tc_, reg_cs_);
                add(reg_ta_, reg_as_);
                add(reg_tb_, reg_bs_);
            }
        }
        if (tail)
            imul(reg_u_, reg_n_, c_); // dst elements of the block
        if (quads()) {
            quad_vectors(tail);
            return;
        }
        for (int m = 0; m < c_; ++m) {
            for (int p = 0; p < pairs_; ++p) {
                const Zmm d = p == 0 ? z_out_ : z_t_;
                vmovdqu64(d, ptr[reg_tbl_ + gather_tbl(m, p)]);
                perm2(d, vec(2 * p), vec(std::min(2 * p + 1, c_ - 1)));
                if (p > 0) {
                    kmov_lanes(k_lane_, ptr[reg_tbl_ + mask_tbl(m, p)]);
                    move_masked(z_out_, k_lane_, z_t_);
                }
            }
            store_out(m, z_out_, tail);
        }
    }

    // 4-byte elements of c = 4a rows (4, 8 and 12), the mirror of
    // jit_select_dt_packed_t::quad_lines: a 4 x 4 transpose within the
    // lanes of rows 4q .. 4q + 3 (vpunpck{l,h}dq, vpunpck{l,h}qdq) leaves
    // in vector 4q + j, as its lane g, column 4g + j's quad q; output
    // vector m's lane l is quad 4m + l of the interleaved block (column
    // (4m + l) / a, quad (4m + l) % a), two vshufi32x4 take two lanes each
    // and a third joins them.
    bool quads() const { return es_ == 4 && c_ % 4 == 0; }
    void quad_vectors(bool tail) {
        const int a = c_ / 4;
        const Zmm u[4] = { Zmm(21), Zmm(22), Zmm(23), Zmm(24) };
        const Zmm t1(25), t2(26);
        transpose_row_quads(a, u);
        for (int m = 0; m < c_; ++m) {
            // Lane i: quad 4m + i.
            int v[4], l[4];
            for (int i = 0; i < 4; ++i)
                std::tie(v[i], l[i]) = quad_at(4 * m + i, a);
            vshufi32x4(t1, vec(v[0]), vec(v[1]),
                       static_cast<uint8_t>(l[0] | l[1] << 4));
            vshufi32x4(t2, vec(v[2]), vec(v[3]),
                       static_cast<uint8_t>(l[2] | l[3] << 4));
            vshufi32x4(z_out_, t1, t2, 0x88);
            store_out(m, z_out_, tail);
        }
    }

    // Output vector m of the block, from `z` (tail: its lanes among the
    // block's reg_u_ dst elements).
    void store_out(int m, const Zmm &z, bool tail) {
        const Address to = ptr[reg_pd_ + 64 * m];
        if (tail) {
            vector_tail_mask(k_out_, reg_u_, m, reg_v_, reg_tb_);
            store_vec_masked(to, k_out_, z);
        } else if (key_.nt_stores) {
            vmovntdq(to, z);
        } else {
            vmovdqu64(to, z);
        }
    }

    int64_t frame() const override { return 0; }
    void body() override {
        mov(reg_n_, arg(offsetof(select_call_args, n)));
        mov(reg_cs_, arg(offsetof(select_call_args, cond_stride)));
        mov(reg_as_, arg(offsetof(select_call_args, src0_stride)));
        mov(reg_bs_, arg(offsetof(select_call_args, src1_stride)));

        full_blocks(reg_n_, [&](bool pf) {
            block(false, pf);
            if (!key_.cond_scalar)
                add(reg_pc_, lanes_);
            if (!key_.src0_scalar)
                add(reg_pa_, 64);
            if (!key_.src1_scalar)
                add(reg_pb_, 64);
            add(reg_pd_, 64 * c_);
        });

        Label l_end;
        test(reg_n_, reg_n_);
        jz(l_end, T_NEAR);
        mov(reg_tb_, uint64_t(-1));
        bzhi(reg_tb_, reg_tb_, reg_n_);
        kmovq(k_cols_, reg_tb_);
        block(true);

        L(l_end);
    }

    const int c_, pairs_;
};

// AVX2's packed kernels share their registers, the stack blocks of the
// inputs read with a stride of 0 and of the tails, and the loop that runs
// a channels-first dst (dt_cols): each input's increment from block to
// block (an input of one row for all expanded into one block on the stack,
// increment 0), two blocks per iteration (block_dt), and the tail. Tails
// have no masked loads or stores (AMD documents faults on masked-off lanes
// as implementation-dependent): after a full iteration, the call's last
// two blocks run once more, the rows they share with the iteration before
// written twice with the same values, with regular stores; in a call of
// fewer rows, the elements that exist are copied byte by byte into blocks
// on the stack, selected there, and each channel's existing elements
// copied byte by byte into dst.
class jit_packed_avx2_base : public jit_packed_base {
protected:
    jit_packed_avx2_base(const kernel_key &key, int c)
        : jit_packed_base(key)
        , c_(c)
        , b_(32 / key.elem_size) {}

    // reg_pc_, reg_pa_, reg_pb_, reg_pd_: the operands at the iteration.
    const Reg64 reg_n_ = rcx; // rows (pixels) left
    // dt_cols: bytes from block to block per input; dt_rows: bytes
    // between rows.
    const Reg64 reg_ic_ = r12;
    const Reg64 reg_ia_ = r13;
    const Reg64 reg_ib_ = r14;
    const Reg64 reg_ld_ = r15; // dt_cols: dst bytes between lines
    const Reg64 reg_q_ = rbp;
    const Reg64 reg_t_ = rax;
    const Reg64 reg_u_ = rdx;
    const Reg64 reg_v_ = rsi;

    int in_bytes(int op) const { return op == 0 ? 1 : es_; }
    // Bytes of one block of an input (B rows of c elements).
    int64_t block_bytes(int op) const {
        return static_cast<int64_t>(c_) * b_ * in_bytes(op);
    }
    static int64_t round32(int64_t v) { return (v + 31) / 32 * 32; }
    // Stack: each input's expanded block (stride 0), each input's two tail
    // blocks, then the outputs of a tail or of an iteration's first block
    // (64 bytes per channel or per 64 dst bytes); a kernel's own blocks
    // from out_off() + 64 * c on.
    int64_t rep_off(int op) const {
        int64_t o = 0;
        for (int i = 0; i < op; ++i)
            o += round32(block_bytes(i));
        return o;
    }
    int64_t tail_off(int op) const {
        int64_t o = rep_off(3);
        for (int i = 0; i < op; ++i)
            o += round32(2 * block_bytes(i));
        return o;
    }
    int64_t out_off() const { return tail_off(3); }

    // Copies reg_u_ bytes from src to dst (the tails), through al.
    void copy_bytes(const RegExp &dst, const RegExp &src) {
        Label l_loop, l_done;
        xor_(reg_v_, reg_v_);
        test(reg_u_, reg_u_);
        jz(l_done, T_NEAR);
        L(l_loop);
        movzx(eax, byte[src + reg_v_]);
        mov(byte[dst + reg_v_], al);
        inc(reg_v_);
        cmp(reg_v_, reg_u_);
        jb(l_loop, T_NEAR);
        L(l_done);
    }

    // `m`: the lanes whose cond (B bytes at `a`) is zero, `zero` holding
    // zeros.
    void cond_zero_mask(const Ymm &m, const Ymm &zero, const Address &a) {
        if (es_ == 1) {
            vmovdqu(m, a);
            vpcmpeqb(m, m, zero);
        } else if (es_ == 2) {
            vpmovzxbw(m, a);
            vpcmpeqw(m, m, zero);
        } else if (es_ == 4) {
            vpmovzxbd(m, a);
            vpcmpeqd(m, m, zero);
        } else {
            vpmovzxbq(m, a);
            vpcmpeqq(m, m, zero);
        }
    }
    // v = cond ? a : b (inverted: the other way), given the mask of
    // cond_zero_mask; `a` or `b` a register (a broadcast) or memory, not v.
    void select(const Ymm &v, const Operand &a, const Operand &b,
                const Ymm &mask) {
        const Operand &base = key_.invert_cond ? b : a;
        const Operand &other = key_.invert_cond ? a : b;
        if (base.isREG())
            vmovdqa(v, static_cast<const Ymm &>(base));
        else
            vmovdqu(v, static_cast<const Address &>(base));
        vpblendvb(v, v, other, mask);
    }
    // dt_cols: channel k's 32 bytes `r` of block h: block 0's (and a
    // tail's) to the stack at out_off(), block 1's stored into dst line k
    // after block 0's, through `t` (streamed where `nt`). reg_q_ walks the
    // lines from reg_pd_.
    void store_channel(int k, int h, bool tail, bool nt, const Ymm &r,
                       const Ymm &t) {
        const int64_t slot = out_off() + 64 * k;
        if (h == 0 || tail) {
            vmovdqu(ptr[rsp + slot + 32 * h], r);
            return;
        }
        if (k == 0)
            mov(reg_q_, reg_pd_);
        vmovdqu(t, ptr[rsp + slot]);
        if (nt) {
            vmovntdq(ptr[reg_q_], t);
            vmovntdq(ptr[reg_q_ + 32], r);
        } else {
            vmovdqu(ptr[reg_q_], t);
            vmovdqu(ptr[reg_q_ + 32], r);
        }
        if (k + 1 < c_)
            add(reg_q_, reg_ld_);
    }

    // dt_cols: block h (0, 1) of the iteration, B rows: selected and
    // de-interleaved; block 0's channels to the stack at out_off(), block
    // 1's stored after block 0's into dst (tail: to the stack too),
    // streamed where `nt`; the input pointers move on one block.
    virtual void block_dt(int h, bool tail, bool nt) = 0;
    // dt_cols with a scalar src_1 (one element for all): its broadcast,
    // where block_dt reads it.
    virtual void broadcast_src1() = 0;

    // dt_cols: the loop over the rows, pointers loaded.
    void generate_dt() {
        mov(reg_n_, arg(offsetof(select_call_args, rows)));
        mov(reg_ld_, arg(offsetof(select_call_args, dst_stride)));
        int shift = 0; // log2(B)
        while ((1 << shift) < b_)
            ++shift;
        struct in_t {
            Reg64 p, inc;
            size_t stride_off;
            int op;
        };
        const in_t ins[] = {
            { reg_pc_, reg_ic_, offsetof(select_call_args, cond_stride), 0 },
            { reg_pa_, reg_ia_, offsetof(select_call_args, src0_stride), 1 },
            { reg_pb_, reg_ib_, offsetof(select_call_args, src1_stride), 2 },
        };
        for (const in_t &in : ins) {
            if (in.op == 2 && key_.src1_scalar) {
                broadcast_src1();
                xor_(in.inc, in.inc);
                continue;
            }
            Label l_strided, l_done;
            mov(in.inc, arg(in.stride_off));
            test(in.inc, in.inc);
            jnz(l_strided, T_NEAR);
            // One row for all: its block, element e = row element e % c.
            const int w = in_bytes(in.op);
            // Past max_unrolled_expand elements, the row's c * w bytes B
            // times by a loop.
            const bool looped = c_ * b_ > max_unrolled_expand;
            if (looped)
                mov(reg_u_, c_ * w);
            for (int r = 0; looped && r < b_; ++r)
                copy_bytes(rsp + rep_off(in.op) + int64_t(r) * c_ * w, in.p);
            for (int e = 0; !looped && e < c_ * b_; ++e) {
                const int64_t from = static_cast<int64_t>(e % c_) * w;
                const int64_t to = rep_off(in.op) + int64_t(e) * w;
                if (w == 1) {
                    movzx(eax, byte[in.p + from]);
                    mov(byte[rsp + to], al);
                } else if (w == 2) {
                    movzx(eax, word[in.p + from]);
                    mov(word[rsp + to], ax);
                } else if (w == 4) {
                    mov(eax, dword[in.p + from]);
                    mov(dword[rsp + to], eax);
                } else {
                    mov(rax, qword[in.p + from]);
                    mov(qword[rsp + to], rax);
                }
            }
            lea(in.p, ptr[rsp + rep_off(in.op)]);
            jmp(l_done, T_NEAR);
            L(l_strided);
            shl(in.inc, shift);
            L(l_done);
        }

        // Code for each input read with an increment (not expanded on the
        // stack, not a scalar src_1), skipped at run time where it is 0.
        const auto each_streamed = [&](auto emit) {
            for (const in_t &in : ins) {
                if (in.op == 2 && key_.src1_scalar)
                    continue;
                Label l_skip;
                test(in.inc, in.inc);
                jz(l_skip, T_NEAR);
                emit(in);
                L(l_skip);
            }
        };

        Label l_iter, l_tail, l_end;
        L(l_iter);
        cmp(reg_n_, 2 * b_);
        jb(l_tail, T_NEAR);
        block_dt(0, false, key_.nt_stores);
        block_dt(1, false, key_.nt_stores);
        add(reg_pd_, 64);
        sub(reg_n_, 2 * b_);
        jmp(l_iter, T_NEAR);

        L(l_tail);
        test(reg_n_, reg_n_);
        jz(l_end, T_NEAR);
        // After a full iteration: the call's last 2B rows again.
        Label l_bytes;
        cmp(reg_pd_, arg(offsetof(select_call_args, dst)));
        je(l_bytes, T_NEAR);
        mov(reg_u_, 2 * b_);
        sub(reg_u_, reg_n_); // rows back
        imul(reg_v_, reg_u_, es_);
        sub(reg_pd_, reg_v_);
        each_streamed([&](const in_t &in) {
            imul(reg_v_, reg_u_, c_ * in_bytes(in.op));
            sub(in.p, reg_v_);
        });
        block_dt(0, false, false);
        block_dt(1, false, false);
        jmp(l_end, T_NEAR);

        // Fewer rows than an iteration: the rows' elements of each
        // streamed input into its tail blocks (an expanded input,
        // increment 0, is read where it is).
        L(l_bytes);
        each_streamed([&](const in_t &in) {
            imul(reg_u_, reg_n_, c_ * in_bytes(in.op));
            copy_bytes(rsp + tail_off(in.op), in.p);
            lea(in.p, ptr[rsp + tail_off(in.op)]);
        });
        block_dt(0, true, false);
        block_dt(1, true, false);
        // Each channel's rows left, into its dst line.
        imul(reg_u_, reg_n_, es_);
        mov(reg_q_, reg_pd_);
        for (int k = 0; k < c_; ++k) {
            copy_bytes(reg_q_, rsp + out_off() + 64 * k);
            if (k + 1 < c_)
                add(reg_q_, reg_ld_);
        }
        L(l_end);
    }

    // The elements of a block past which a one-row-for-all input is
    // expanded by a loop (1-byte elements of many channels), not element
    // by element.
    static constexpr int max_unrolled_expand = 512;
    const int c_, b_;
};

// AVX2: blocks of B = 32 / element bytes rows (8 pixels of f32, 4 of f64),
// two per iteration, so that each dst line gets a whole 64-byte piece. Per
// block, c vectors of each input: cond's B bytes widened (vpmovzxb{d,q})
// and compared with zero, vpblendvb between src_0 and src_1; each channel
// gathered by vpermd from every vector that holds some of its elements,
// joined by vpblendd. The first block's channels wait on the stack, and
// each line's two halves are stored one after the other (streamed half by
// half a block apart, the write-combining buffers would flush partial
// lines, as they did for the AVX2 16 x 8 kernel). 4- and 8-byte elements
// (AVX2 has no 16-bit permute across lanes), at most 8 channels (the
// vectors of a block in ymm0-7). The loop and the tails:
// jit_packed_avx2_base.
class jit_select_dt_packed_avx2_t : public jit_packed_avx2_base {
public:
    explicit jit_select_dt_packed_avx2_t(const kernel_key &key)
        : jit_packed_avx2_base(key, key.dt_cols)
        , k_(key.elem_size / 4) {
        generate();
        ready();
    }

private:
    static Ymm vec(int m) { return Ymm(m); }
    const Ymm y_out_ = ymm8, y_t_ = ymm9, y_mask_ = ymm10, y_zero_ = ymm11,
              y_b_ = ymm12;
    int64_t frame() const override { return out_off() + 64 * c_; }

    // The vectors holding elements of channel ch: [first, last].
    int first_vec(int line) const { return line / b_; }
    int last_vec(int line) const { return (line + c_ * (b_ - 1)) / b_; }
    // vpermd indices of channel ch from vector m (dword lanes), and the
    // vpblendd immediate of the lanes it gives.
    int perm_idx(int line, int m, int lane) const {
        const int j = lane / k_, e = line + c_ * j;
        return e / b_ == m ? (e % b_) * k_ + lane % k_ : 0;
    }
    int blend_imm(int line, int m) const {
        int imm = 0;
        for (int lane = 0; lane < 8; ++lane) {
            const int e = line + c_ * (lane / k_);
            if (e / b_ == m)
                imm |= 1 << lane;
        }
        return imm;
    }
    int64_t idx_tbl(int line, int m) const {
        int64_t o = 0;
        for (int x = 0; x < line; ++x)
            o += 32 * (last_vec(x) - first_vec(x) + 1);
        return o + 32 * (m - first_vec(line));
    }
    void emit_tables() override {
        for (int line = 0; line < c_; ++line)
            for (int m = first_vec(line); m <= last_vec(line); ++m)
                for (int lane = 0; lane < 8; ++lane)
                    dd(static_cast<uint32_t>(perm_idx(line, m, lane)));
    }

    // Block h (0, 1) of the current pair: selected into ymm0..c-1, each
    // channel gathered; block 0's channels to the stack, block 1's stored
    // after block 0's (tail: to the stack too), streamed where `nt`. The
    // pointers move on one block after it.
    void block_dt(int h, bool tail, bool nt) override {
        for (int m = 0; m < c_; ++m) {
            cond_zero_mask(y_mask_, y_zero_, ptr[reg_pc_ + b_ * m]);
            const Address b = ptr[reg_pb_ + 32 * m];
            if (key_.src1_scalar)
                select(vec(m), ptr[reg_pa_ + 32 * m], y_b_, y_mask_);
            else
                select(vec(m), ptr[reg_pa_ + 32 * m], b, y_mask_);
        }
        add(reg_pc_, reg_ic_);
        add(reg_pa_, reg_ia_);
        add(reg_pb_, reg_ib_);
        for (int line = 0; line < c_; ++line) {
            for (int m = first_vec(line); m <= last_vec(line); ++m) {
                // 8-byte elements may skip vectors (c = 6: vector 2).
                if (blend_imm(line, m) == 0)
                    continue;
                vmovdqu(y_t_, ptr[reg_tbl_ + idx_tbl(line, m)]);
                if (m == first_vec(line)) {
                    vpermd(y_out_, y_t_, vec(m));
                } else {
                    vpermd(y_t_, y_t_, vec(m));
                    vpblendd(y_out_, y_out_, y_t_, blend_imm(line, m));
                }
            }
            store_channel(line, h, tail, nt, y_out_, y_t_);
        }
    }

    void broadcast_src1() override {
        if (es_ == 4)
            vpbroadcastd(y_b_, ptr[reg_pb_]);
        else
            vpbroadcastq(y_b_, ptr[reg_pb_]);
    }

    void body() override {
        vpxor(y_zero_, y_zero_, y_zero_);
        generate_dt();
    }

    const int k_;
};

// AVX2, 4-byte elements of 4, 8 or 12 channels, 2-byte ones of 8 to 15
// and 1-byte ones of 11 to 63 into a channels-first dst (dt_cols), as
// AVX-512's quad_lines: a pixel's quad of 4 channels is one 16-byte lane
// (4-byte elements), one quadword (2-byte ones) or one dword (1-byte ones)
// of the selected block, which waits on the stack.
// A last quad of 1 to 3 channels (1- and 2-byte elements) reads into the
// next pixel, or the stage's slack, and stores only its lines.
//
// 4-byte elements: for each quad q and j < 4 a vector takes pixel j's quad
// q as its low lane and pixel 4 + j's as its high one (a load and a
// vinserti128 from the stack), and a 4 x 4 transpose within the lanes
// (vpunpck{l,h}dq, vpunpck{l,h}qdq) leaves channel 4q + k's 8 pixels in one
// vector: 8 shuffles and 8 loads per 4 channels.
//
// 2-byte elements, both blocks of the iteration at once (32 pixels): for
// each quad q and j < 8 a vector takes the quads q of pixels j and 16 + j
// as its low lane and of pixels 8 + j and 24 + j as its high one (vmovq,
// vmovhps, vinserti128), and an 8 x 8 transpose of words within the lanes
// (vpunpck{l,h}{wd,dq,qdq}) leaves in vector k < 4 channel 4q + k's pixels
// 0-15 and in vector 4 + k its pixels 16-31: one 64-byte piece of each of
// 4 dst lines from 24 shuffles and 32 loads.
//
// Where the vpermd kernel gathers a channel from every vector that holds
// some of it and the lanes kernel shuffles and ORs every element.
class jit_select_dt_quads_avx2_t : public jit_packed_avx2_base {
public:
    explicit jit_select_dt_quads_avx2_t(const kernel_key &key)
        : jit_packed_avx2_base(key, key.dt_cols) {
        generate();
        ready();
    }

private:
    // 4- and 1-byte elements; the 2-byte path's transposes take every
    // register, and keep its broadcast src_1 on the stack.
    const Ymm y_sel_ = ymm0, y_t_ = ymm9, y_mask_ = ymm10, y_zero_ = ymm11,
              y_b_ = ymm12;
    int64_t stage_off() const { return out_off() + 64 * c_; }
    // A broadcast src_1 (2-byte elements).
    int64_t bcast_off() const { return stage_off() + 64 * c_ + 32; }
    int64_t frame() const override { return bcast_off() + 32; }
    // 1-byte elements: the vpshufb of a lane's 4 x 4 bytes.
    void emit_tables() override {
        if (es_ == 1)
            emit_byte_quad_shuffle();
    }

    void block_dt(int h, bool tail, bool nt) override {
        // 2-byte elements stage both blocks, then transpose them together
        // in every register (y_zero_ too).
        const int64_t stage = stage_off() + (es_ == 2 ? 32 * c_ * h : 0);
        if (es_ == 2)
            vpxor(y_zero_, y_zero_, y_zero_);
        for (int m = 0; m < c_; ++m) {
            cond_zero_mask(y_mask_, y_zero_, ptr[reg_pc_ + b_ * m]);
            const Address b = key_.src1_scalar ? ptr[rsp + bcast_off()]
                                               : ptr[reg_pb_ + 32 * m];
            if (key_.src1_scalar && es_ != 2)
                select(y_sel_, ptr[reg_pa_ + 32 * m], y_b_, y_mask_);
            else
                select(y_sel_, ptr[reg_pa_ + 32 * m], b, y_mask_);
            vmovdqu(ptr[rsp + stage + 32 * m], y_sel_);
        }
        add(reg_pc_, reg_ic_);
        add(reg_pa_, reg_ia_);
        add(reg_pb_, reg_ib_);
        if (es_ == 4)
            lane_quads(h, tail, nt);
        else if (es_ == 1)
            byte_quads(h, tail, nt);
        else if (h == 1)
            word_quads(tail, nt);
    }

    // 1-byte elements, one block of 32 pixels: for each quad q and i < 4,
    // a vector takes the dwords of quad q of pixels 4i .. 4i + 3 as its low
    // lane and of 16 + 4i .. 19 + 4i as its high one (vmovd, vpinsrd,
    // vinserti128 from the stack; a last quad of 1 to 3 channels reads into
    // the next pixel, or the stage's slack), a vpshufb turns each lane's 4
    // x 4 bytes channels by pixels, and a 4 x 4 transpose of dwords leaves
    // channel 4q + k's 32 pixels in one vector (half of its dst line's
    // 64-byte piece: store_channel).
    void byte_quads(int h, bool tail, bool nt) {
        const int a = (c_ + 3) / 4;
        const auto quad = [&](int p, int q) {
            return ptr[rsp + stage_off() + c_ * p + 4 * q];
        };
        const Ymm y[4] = { ymm1, ymm2, ymm3, ymm4 };
        const Ymm u[4] = { ymm5, ymm6, ymm7, ymm8 };
        for (int q = 0; q < a; ++q) {
            for (int i = 0; i < 4; ++i) {
                const Xmm lo(y[i].getIdx()), hi(u[i].getIdx());
                for (int half = 0; half < 2; ++half) {
                    const Xmm &x = half ? hi : lo;
                    const int p0 = 16 * half + 4 * i;
                    vmovd(x, quad(p0, q));
                    for (int j = 1; j < 4; ++j)
                        vpinsrd(x, x, quad(p0 + j, q), j);
                }
                vinserti128(y[i], y[i], hi, 1);
                vpshufb(y[i], y[i], ptr[reg_tbl_]);
            }
            transpose_dwords_in_lanes(y, u);
            for (int k = 0; k < 4 && 4 * q + k < c_; ++k)
                store_channel(4 * q + k, h, tail, nt, y[k], y_t_);
        }
    }

    void lane_quads(int h, bool tail, bool nt) {
        const int a = c_ / 4;
        const Ymm y[4] = { ymm1, ymm2, ymm3, ymm4 };
        const Ymm u[4] = { ymm5, ymm6, ymm7, ymm8 };
        for (int q = 0; q < a; ++q) {
            for (int j = 0; j < 4; ++j) {
                vmovdqu(Xmm(y[j].getIdx()),
                        ptr[rsp + stage_off() + 16 * (a * j + q)]);
                vinserti128(y[j], y[j],
                            ptr[rsp + stage_off() + 16 * (a * (4 + j) + q)], 1);
            }
            transpose_dwords_in_lanes(y, u);
            for (int k = 0; k < 4; ++k)
                store_channel(4 * q + k, h, tail, nt, y[k], y_t_);
        }
    }

    void word_quads(bool tail, bool nt) {
        // A last quad of 1 to 3 channels reads into the next pixel (or
        // the 8 bytes of slack past the stage); its lines past c are not
        // stored.
        const int a = (c_ + 3) / 4;
        // Quad q of pixel p (0..31) on the stack.
        const auto quad = [&](int p, int q) {
            return ptr[rsp + stage_off() + 2 * c_ * p + 8 * q];
        };
        const Ymm r[8] = { ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7 };
        const Ymm t[8] = {
            ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14, ymm15
        };
        for (int q = 0; q < a; ++q) {
            for (int j = 0; j < 8; ++j) {
                const Xmm lo(j), hi(8 + j);
                vmovq(lo, quad(j, q));
                vmovhps(lo, lo, quad(16 + j, q));
                vmovq(hi, quad(8 + j, q));
                vmovhps(hi, hi, quad(24 + j, q));
                vinserti128(r[j], r[j], hi, 1);
            }
            transpose_words_in_lanes(*this, r, t);
            for (int k = 0; k < 4 && 4 * q + k < c_; ++k) {
                const int line = 4 * q + k;
                if (tail) {
                    vmovdqu(ptr[rsp + out_off() + 64 * line], t[k]);
                    vmovdqu(ptr[rsp + out_off() + 64 * line + 32], t[4 + k]);
                    continue;
                }
                if (line == 0)
                    mov(reg_q_, reg_pd_);
                if (nt) {
                    vmovntdq(ptr[reg_q_], t[k]);
                    vmovntdq(ptr[reg_q_ + 32], t[4 + k]);
                } else {
                    vmovdqu(ptr[reg_q_], t[k]);
                    vmovdqu(ptr[reg_q_ + 32], t[4 + k]);
                }
                if (line + 1 < c_)
                    add(reg_q_, reg_ld_);
            }
        }
    }

    void broadcast_src1() override {
        if (es_ == 4) {
            vpbroadcastd(y_b_, ptr[reg_pb_]);
        } else if (es_ == 1) {
            vpbroadcastb(y_b_, ptr[reg_pb_]);
        } else {
            vpbroadcastw(y_b_, ptr[reg_pb_]);
            vmovdqu(ptr[rsp + bcast_off()], y_b_);
        }
    }

    void body() override {
        vpxor(y_zero_, y_zero_, y_zero_);
        generate_dt();
    }
};

// AVX2, by 16-byte lanes: 1- and 2-byte elements into a channels-first dst
// (dt_cols; AVX2 has no 8- or 16-bit permute across lanes, so the vpermd
// kernel above takes only 4- and 8-byte ones, and those up to 8 channels)
// and the interleaving direction (dt_rows) for 1-, 2-, 4- and 8-byte
// elements, c up to max_packed_lanes_avx2 (1-byte elements into a
// channels-first dst: max_packed_lanes_avx2_e1_cols). Past 7 channels
// (2c + 2 registers) the pairs wait on the stack: the de-interleave gathers
// each channel from them as it stores it, the interleave builds each pair
// in one register and the interleaved vectors from two stored pairs. The
// dispatcher runs it for 1-byte elements on AVX-512 CPUs too, which have no
// byte permute across lanes either without AVX512_VBMI.
//
// With H = 16 / element bytes elements per lane, a block of B = 2H pixels
// is c vectors interleaved (2c lanes: lanes 0..c-1 hold pixels 0..H-1,
// lanes c..2c-1 pixels H..2H-1) or c vectors of one channel each (lane 0
// pixels 0..H-1, lane 1 the rest). The pair vector i, lanes i and c + i
// of the interleaved block, holds the same offsets of both pixel halves,
// so one in-lane byte shuffle moves its elements to their places in a
// channel's vector, or back, for both halves at once:
//
//   de-interleave: pair i = vperm2i128 of the two interleaved vectors
//     holding lanes i and c + i; channel k = OR over the pairs i holding
//     some of its elements of vpshufb(pair i, its mask for k);
//   interleave: pair i = OR over the channels k in lane i of
//     vpshufb(channel k, its mask for i); interleaved vector m = vperm2i128
//     of the pairs holding lanes 2m and 2m + 1.
//
// Per element at most one vpshufb and one vpor (a lane holds at most H
// channels), and 1 / (2H) vperm2i128. Two blocks per iteration, so that
// each dst line (de-interleave) gets a whole 64-byte piece and the
// interleaved dst whole lines. The selection as in the vpermd kernel:
// cond's bytes widened, compared with zero, vpblendvb. Tails as there
// (jit_packed_avx2_base): the call's last iteration again, or byte by byte
// through blocks on the stack where the call is shorter, with no masked
// access.
//
// Prefetch (kernel_key::dt_prefetch, the interleaving direction): each
// iteration reads a line of every row of every input, c streams each, more
// than the hardware prefetchers follow from 8 rows on; with it, the first
// block of an iteration prefetches (prefetcht1) each row's line 8
// iterations on. The dispatcher gives it to the non-temporal variant of 8
// rows or more, the one the store tuner runs beyond the caches: on the Zen
// 4 guest, [64, c, 112, 112] from DRAM, bf16 of 12 rows ran 1.95x as fast
// and of 8 1.3x, f32 1.13-1.3x; from the caches it cost 10-25%, and 3 or 4
// rows ran slower with it (docs/performance.md).
class jit_select_dt_lanes_avx2_t : public jit_packed_avx2_base {
public:
    explicit jit_select_dt_lanes_avx2_t(const kernel_key &key)
        : jit_packed_avx2_base(key, key.dt_rows ? key.dt_rows : key.dt_cols)
        , inter_(key.dt_rows != 0)
        , h_(16 / key.elem_size)
        , spill_(2 * c_ + 2 > 16) {
        generate();
        ready();
    }

private:
    // Interleave with kernel_key::dt_prefetch: iterations ahead whose
    // lines of each row the first block of an iteration prefetches into
    // L2.
    static constexpr int pf_iters = 8;

    // Interleave: row pointers within a block.
    const Reg64 reg_tc_ = r15, reg_ta_ = rbp, reg_tb_ = rax;

    // ymm0..c-1: the block's vectors (interleaved or one per channel);
    // ymm c..2c-1: the channels' (pairs') accumulators, which hold the
    // mask, zero and a broadcast while the block is selected.
    static Ymm vec(int m) { return Ymm(m); }
    Ymm acc(int k) const { return Ymm(c_ + k); }
    Ymm y_zero() const { return Ymm(c_); }
    Ymm y_mask() const { return Ymm(c_ + 1); }
    const Ymm y_pair_ = ymm14, y_t_ = ymm15;

    // Element g of a half-block's interleaved run: lane g / H, channel
    // g % c of pixel g / c.
    bool in_pair(int k, int i) const {
        for (int p = 0; p < h_; ++p)
            if ((p * c_ + k) / h_ == i)
                return true;
        return false;
    }
    // The shuffles' masks (32 bytes: the lane's 16 twice), one per (k, i)
    // with in_pair(k, i), in the order k * c + i.
    int64_t mask_tbl(int k, int i) const {
        int64_t o = 0;
        for (int x = 0; x < c_ * c_; ++x) {
            if (x == k * c_ + i)
                return o;
            if (in_pair(x / c_, x % c_))
                o += 32;
        }
        return o;
    }
    void emit_tables() override {
        if (byte_quads()) {
            emit_byte_quad_shuffle();
            return;
        }
        if (quads() || word_quads()) // read no mask
            return;
        for (int k = 0; k < c_; ++k)
            for (int i = 0; i < c_; ++i) {
                if (!in_pair(k, i))
                    continue;
                uint8_t m[16];
                std::memset(m, 0x80, sizeof(m));
                for (int p = 0; p < h_; ++p) {
                    const int g = p * c_ + k;
                    if (g / h_ != i)
                        continue;
                    // De-interleave: channel k's pixel p from offset g % H
                    // of pair i; interleave: the other way round.
                    const int to = inter_ ? g % h_ : p,
                              from = inter_ ? p : g % h_;
                    for (int b = 0; b < es_; ++b)
                        m[to * es_ + b] = static_cast<uint8_t>(from * es_ + b);
                }
                for (int half = 0; half < 2; ++half)
                    for (uint8_t v : m)
                        db(v);
            }
    }

    // Stack, past the shared blocks and 32 bytes of slack (which the last
    // piece of interleave_word_quads' block may run into): a broadcast
    // src_1.
    int64_t bcast_off() const { return out_off() + 64 * c_ + 32; }
    // More than 7 channels: the pairs, 32 bytes each.
    int64_t pair_off() const { return bcast_off() + 32; }
    Address pair(int i) { return ptr[rsp + pair_off() + 32 * i]; }
    int64_t frame() const override { return pair_off() + 32 * c_; }

    void bcast(const Ymm &y, const Address &a) {
        if (es_ == 1)
            vpbroadcastb(y, a);
        else if (es_ == 2)
            vpbroadcastw(y, a);
        else if (es_ == 4)
            vpbroadcastd(y, a);
        else
            vpbroadcastq(y, a);
    }
    // De-interleave: the pairs and channels of the block in ymm0..c-1
    // (more than 7 channels: the pairs to the stack, each channel gathered
    // as it is stored, channel()).
    void deinterleave() {
        std::vector<bool> started(c_, false);
        for (int i = 0; i < c_; ++i) {
            const int lo = i, hi = c_ + i;
            vperm2i128(y_pair_, vec(lo / 2), vec(hi / 2),
                       (lo % 2) | ((2 + hi % 2) << 4));
            if (spill_) {
                vmovdqu(pair(i), y_pair_);
                continue;
            }
            for (int k = 0; k < c_; ++k) {
                if (!in_pair(k, i))
                    continue;
                const Address m = ptr[reg_tbl_ + mask_tbl(k, i)];
                if (!started[k]) {
                    vpshufb(acc(k), y_pair_, m);
                    started[k] = true;
                } else {
                    vpshufb(y_t_, y_pair_, m);
                    vpor(acc(k), acc(k), y_t_);
                }
            }
        }
    }
    // Channel k of the de-interleaved block: acc(k), or, with the pairs
    // on the stack, gathered from them into ymm0 (the block's vectors are
    // spent by then).
    Ymm channel(int k) {
        if (!spill_)
            return acc(k);
        const Ymm r = vec(0);
        bool started = false;
        for (int i = 0; i < c_; ++i) {
            if (!in_pair(k, i))
                continue;
            vmovdqu(y_pair_, pair(i));
            const Address m = ptr[reg_tbl_ + mask_tbl(k, i)];
            if (!started) {
                vpshufb(r, y_pair_, m);
                started = true;
            } else {
                vpshufb(y_t_, y_pair_, m);
                vpor(r, r, y_t_);
            }
        }
        return r;
    }
    // Interleave: the pairs of the channels in ymm0..c-1 (more than 7
    // channels: each built in y_pair_ and put on the stack), then the
    // interleaved vectors back into ymm0..c-1.
    void interleave() {
        for (int i = 0; i < c_; ++i) {
            const Ymm p = spill_ ? y_pair_ : acc(i);
            bool started = false;
            for (int k = 0; k < c_; ++k) {
                if (!in_pair(k, i))
                    continue;
                const Address m = ptr[reg_tbl_ + mask_tbl(k, i)];
                if (!started) {
                    vpshufb(p, vec(k), m);
                    started = true;
                } else {
                    vpshufb(y_t_, vec(k), m);
                    vpor(p, p, y_t_);
                }
            }
            if (spill_)
                vmovdqu(pair(i), p);
        }
        for (int m = 0; m < c_; ++m) {
            const int l0 = 2 * m, l1 = 2 * m + 1;
            const int p0 = l0 % c_, p1 = l1 % c_;
            const int imm = (l0 / c_) | ((2 + l1 / c_) << 4);
            if (spill_) {
                vmovdqu(y_t_, pair(p0));
                vperm2i128(vec(m), y_t_, pair(p1), imm);
            } else {
                vperm2i128(vec(m), acc(p0), acc(p1), imm);
            }
        }
    }

    // De-interleave, block h (0, 1) of the iteration: selected, each
    // channel gathered; block 0's channels to the stack, block 1's stored
    // after block 0's (tail: to the stack too), streamed where `nt`. The
    // input pointers move on one block.
    void block_dt(int h, bool tail, bool nt) override {
        vpxor(y_zero(), y_zero(), y_zero());
        for (int m = 0; m < c_; ++m) {
            cond_zero_mask(y_mask(), y_zero(), ptr[reg_pc_ + b_ * m]);
            const Address a = ptr[reg_pa_ + 32 * m];
            const Address b = key_.src1_scalar ? ptr[rsp + bcast_off()]
                                               : ptr[reg_pb_ + 32 * m];
            select(vec(m), a, b, y_mask());
        }
        add(reg_pc_, reg_ic_);
        add(reg_pa_, reg_ia_);
        add(reg_pb_, reg_ib_);
        if (byte_quads()) {
            deinterleave_byte_quads(h, tail, nt);
            return;
        }
        deinterleave();
        for (int k = 0; k < c_; ++k)
            store_channel(k, h, tail, nt, channel(k), y_t_);
    }

    // 1-byte elements of 8 channels, a pixel's quads of 4 channels two
    // dwords: vector m of the block holds pixels 4m .. 4m + 3. For quad q
    // and i < 4, a vector takes quad q of pixels 4i .. 4i + 3 as its low
    // lane and of 16 + 4i .. 19 + 4i as its high one (vshufps of vectors i
    // and 4 + i, then vpermq); a vpshufb turns each lane's 4 x 4 bytes
    // (pixels by channels) into channels by pixels, and a 4 x 4 transpose
    // of dwords within the lanes leaves channel 4q + k's 32 pixels in one
    // vector. 20 shuffles per 4 channels, where the pairs take a vpshufb
    // and a vpor per channel and pair (16 per channel of 8). The
    // interleave runs the same steps backwards.
    bool byte_quads() const { return es_ == 1 && c_ == 8; }
    // emit_byte_quad_shuffle's table.
    int64_t byte_quads_tbl() const { return 0; }
    void deinterleave_byte_quads(int h, bool tail, bool nt) {
        const Ymm t0 = acc(0), t1 = acc(1);
        for (int i = 0; i < 4; ++i) {
            // Quads 0 and 1 of both vectors' pixels, then each lane's
            // pixels in order (qwords 0, 2, 1, 3).
            vshufps(t0, vec(i), vec(4 + i), 0x88);
            vshufps(t1, vec(i), vec(4 + i), 0xdd);
            vpermq(vec(i), t0, 0xd8);
            vpermq(vec(4 + i), t1, 0xd8);
        }
        const Ymm u[4] = { acc(0), acc(1), acc(2), acc(3) };
        for (int q = 0; q < 2; ++q) {
            const Ymm v[4] = { vec(4 * q), vec(4 * q + 1), vec(4 * q + 2),
                               vec(4 * q + 3) };
            for (const Ymm &x : v)
                vpshufb(x, x, ptr[reg_tbl_ + byte_quads_tbl()]);
            transpose_dwords_in_lanes(v, u);
            for (int k = 0; k < 4; ++k)
                store_channel(4 * q + k, h, tail, nt, v[k], y_t_);
        }
    }
    void interleave_byte_quads(int h, bool tail, bool nt) {
        const Ymm u[4] = { acc(0), acc(1), acc(2), acc(3) };
        transpose_row_quads(2, u);
        for (int m = 0; m < 8; ++m)
            vpshufb(vec(m), vec(m), ptr[reg_tbl_ + byte_quads_tbl()]);
        // vec(i), vec(4 + i): quads 0 and 1 of pixels 4i .. 4i + 3 (low
        // lane) and 16 + 4i .. 19 + 4i.
        const Ymm lo = acc(4), hi = acc(5);
        for (int i = 0; i < 4; ++i) {
            vpunpckldq(lo, vec(i), vec(4 + i));
            vpunpckhdq(hi, vec(i), vec(4 + i));
            vperm2i128(y_t_, lo, hi, 0x20);
            store_interleaved(i, h, tail, nt, y_t_);
            vperm2i128(y_t_, lo, hi, 0x31);
            store_interleaved(4 + i, h, tail, nt, y_t_);
        }
    }

    // Interleave, block h of the iteration: each row selected, the pairs
    // and interleaved vectors built and stored (tail: to the stack),
    // streamed where `nt`.
    void block_dti(int h, bool tail, bool nt, bool pf = false) {
        mov(reg_tc_, reg_pc_);
        mov(reg_ta_, reg_pa_);
        mov(reg_tb_, reg_pb_);
        if (word_quads()) {
            interleave_word_quads(h, tail, nt, pf);
            return;
        }
        vpxor(y_zero(), y_zero(), y_zero());
        // A scalar operand's broadcast: the pair accumulator past the
        // mask (c >= 2, so acc(2) or y_pair_ is free while selecting).
        const Ymm y_bc = c_ > 2 ? acc(2) : y_pair_;
        for (int r = 0; r < c_; ++r)
            select_row(r, h, pf, vec(r), y_mask(), y_zero(), y_bc);
        if (quads()) {
            interleave_quads(h, tail, nt);
            return;
        }
        if (byte_quads()) {
            interleave_byte_quads(h, tail, nt);
            return;
        }
        interleave();
        for (int m = 0; m < c_; ++m)
            store_interleaved(m, h, tail, nt, vec(m));
    }

    // Interleave: row r of block h selected into `v` (`mask`, `bc`
    // clobbered, `zero` holding zeros), its lines prefetched where `pf`
    // (block 0 of an iteration);
    // reg_tc_, reg_ta_, reg_tb_ then at row r + 1.
    void select_row(int r, int h, bool pf, const Ymm &v, const Ymm &mask,
                    const Ymm &zero, const Ymm &bc) {
        if (key_.cond_scalar) {
            vpbroadcastb(mask, ptr[reg_tc_]);
            vpcmpeqb(mask, mask, zero);
        } else {
            cond_zero_mask(mask, zero, ptr[reg_tc_ + b_ * h]);
        }
        if (key_.src0_scalar && key_.src1_scalar) {
            bcast(v, ptr[reg_ta_]);
            bcast(bc, ptr[reg_tb_]);
            // mask: cond zero (inverted: take src_0 there).
            if (key_.invert_cond)
                vpblendvb(v, bc, v, mask);
            else
                vpblendvb(v, v, bc, mask);
        } else if (key_.src0_scalar) {
            bcast(bc, ptr[reg_ta_]);
            select(v, bc, ptr[reg_tb_ + 32 * h], mask);
        } else if (key_.src1_scalar) {
            bcast(bc, ptr[reg_tb_]);
            select(v, ptr[reg_ta_ + 32 * h], bc, mask);
        } else {
            select(v, ptr[reg_ta_ + 32 * h], ptr[reg_tb_ + 32 * h], mask);
        }
        if (pf) {
            // One line of each row a block pair reads; cond's rows
            // advance 2B bytes an iteration.
            if (!key_.cond_scalar)
                prefetcht1(ptr[reg_tc_ + 2 * b_ * pf_iters]);
            if (!key_.src0_scalar)
                prefetcht1(ptr[reg_ta_ + 64 * pf_iters]);
            if (!key_.src1_scalar)
                prefetcht1(ptr[reg_tb_ + 64 * pf_iters]);
        }
        if (r + 1 < c_) {
            add(reg_tc_, reg_ic_);
            add(reg_ta_, reg_ia_);
            add(reg_tb_, reg_ib_);
        }
    }

    // Interleaved vector m of block h, from `v` (tail: to the stack).
    void store_interleaved(int m, int h, bool tail, bool nt, const Ymm &v) {
        const int64_t o = 32 * (static_cast<int64_t>(c_) * h + m);
        if (tail)
            vmovdqu(ptr[rsp + out_off() + o], v);
        else if (nt)
            vmovntdq(ptr[reg_pd_ + o], v);
        else
            vmovdqu(ptr[reg_pd_ + o], v);
    }

    // 4-byte elements of c = 4a rows (4, 8 and 12), as AVX-512's
    // quad_vectors: a 4 x 4 transpose within the lanes of rows 4q .. 4q +
    // 3 leaves in ymm 4q + j, as its lane g, column 4g + j's quad q (the
    // registers past the rows, free once the rows are selected, hold the
    // first stage); each interleaved vector's two lanes then come from
    // one vperm2i128. 8 shuffles per 4 rows and one per output vector,
    // where the pairs take a shuffle and an OR per element (and spill to
    // the stack past 7 rows).
    bool quads() const { return inter_ && es_ == 4 && c_ % 4 == 0; }
    void interleave_quads(int h, bool tail, bool nt) {
        const int a = c_ / 4;
        const Ymm u[4] = { Ymm(c_), Ymm(c_ + 1), Ymm(c_ + 2), Ymm(c_ + 3) };
        transpose_row_quads(a, u);
        for (int m = 0; m < c_; ++m) {
            // Lane i: quad 2m + i.
            int v[2], l[2];
            for (int i = 0; i < 2; ++i)
                std::tie(v[i], l[i]) = quad_at(2 * m + i, a);
            vperm2i128(y_t_, vec(v[0]), vec(v[1]),
                       static_cast<uint8_t>(l[0] | (2 + l[1]) << 4));
            store_interleaved(m, h, tail, nt, y_t_);
        }
    }

    // 2-byte elements of 8 to 15 rows and of every multiple of 4 up to
    // 28: each group of 8 rows selected into ymm0-7, where in a lane
    // (channels 8g .. 8g + 7 of 8 pixels) an 8 x 8 transpose of words
    // leaves each pixel's 8 channels of the group, two 16-byte quads,
    // stored whole; a last group of up to 4 rows into ymm0-3, where a 4 x
    // 4 transpose (vpunpck{l,h}wd, vpunpck{l,h}dq) leaves each pixel's last
    // quad, stored as a quadword.
    // 24 shuffles per 8 rows and 8 per 4, and a store per quad or pair of
    // quads, where the pairs take a shuffle and an OR per element and
    // spill to the stack (and stop at 13 rows). The nt variant (and a
    // tail) puts the pieces on the stack and streams each interleaved
    // vector from there.
    bool word_quads() const {
        return inter_ && es_ == 2 && c_ >= 8
               && (c_ <= max_packed_dt_cols
                   || (c_ % 4 == 0 && c_ <= max_packed_word_quads_avx2));
    }
    void interleave_word_quads(int h, bool tail, bool nt, bool pf) {
        // A last group of rows short of 4 or 8 stores its pixels' pieces
        // whole, running into the next pixel: on the stack, the groups in
        // reverse order so that each later group writes over what the
        // one after it ran into (the slack past the block takes the last
        // pixel's).
        const bool partial = c_ % 4 != 0;
        const bool staged = tail || nt || partial;
        const int64_t block = 32 * static_cast<int64_t>(c_) * h;
        // Byte o of pixel p of block h, in dst or on the stack.
        const auto at = [&](int p, int64_t o) {
            const int64_t off = block + 2 * c_ * p + o;
            return staged ? ptr[rsp + out_off() + off] : ptr[reg_pd_ + off];
        };
        const Ymm r[8] = { ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7 };
        const Ymm t[8] = {
            ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14, ymm15
        };
        const int groups = (c_ + 7) / 8;
        for (int n = 0; n < groups; ++n) {
            const int g = partial ? groups - 1 - n : n;
            const int rows = std::min(8, c_ - 8 * g);
            if (partial) {
                // The group's first row.
                const Reg64 ps[3] = { reg_pc_, reg_pa_, reg_pb_ };
                const Reg64 ts[3] = { reg_tc_, reg_ta_, reg_tb_ };
                const Reg64 is[3] = { reg_ic_, reg_ia_, reg_ib_ };
                for (int op = 0; op < 3; ++op) {
                    if (g == 0) {
                        mov(ts[op], ps[op]);
                        continue;
                    }
                    imul(ts[op], is[op], 8 * g);
                    add(ts[op], ps[op]);
                }
            }
            // Selecting: the mask, zero and a broadcast in t[0..2].
            vpxor(t[1], t[1], t[1]);
            for (int i = 0; i < rows; ++i)
                select_row(8 * g + i, h, pf, r[i], t[0], t[1], t[2]);
            const int64_t o = 16 * g;
            if (rows <= 4) {
                // r[i]: the quad of pixels 2i, 2i + 1 (lane 0), 8 + 2i,
                // 9 + 2i.
                words_then_dwords_in_lanes(*this, r, t, 1);
                for (int i = 0; i < 4; ++i) {
                    const Xmm lo(r[i].getIdx()), hi(t[i].getIdx());
                    vmovq(at(2 * i, o), lo);
                    vmovhps(at(2 * i + 1, o), lo);
                    vextracti128(hi, r[i], 1);
                    vmovq(at(8 + 2 * i, o), hi);
                    vmovhps(at(9 + 2 * i, o), hi);
                }
                continue;
            }
            transpose_words_in_lanes(*this, r, t);
            for (int p = 0; p < 8; ++p) {
                vmovdqu(at(p, o), Xmm(t[p].getIdx()));
                vextracti128(at(8 + p, o), t[p], 1);
            }
        }
        if (tail || !staged)
            return;
        for (int m = 0; m < c_; ++m) {
            vmovdqu(y_t_, ptr[rsp + out_off() + block + 32 * m]);
            if (nt)
                vmovntdq(ptr[reg_pd_ + block + 32 * m], y_t_);
            else
                vmovdqu(ptr[reg_pd_ + block + 32 * m], y_t_);
        }
    }

    void broadcast_src1() override {
        bcast(y_t_, ptr[reg_pb_]);
        vmovdqu(ptr[rsp + bcast_off()], y_t_);
    }

    void generate_dti() {
        mov(reg_n_, arg(offsetof(select_call_args, n)));
        mov(reg_ic_, arg(offsetof(select_call_args, cond_stride)));
        mov(reg_ia_, arg(offsetof(select_call_args, src0_stride)));
        mov(reg_ib_, arg(offsetof(select_call_args, src1_stride)));
        const bool scalar[3] = { key_.cond_scalar != 0, key_.src0_scalar != 0,
                                 key_.src1_scalar != 0 };

        // With the key's prefetch, first while pf_iters more iterations
        // follow (no prefetch reaches past the call's columns).
        for (const bool pf : { true, false }) {
            if (pf && !key_.dt_prefetch)
                continue;
            Label l_iter, l_done;
            L(l_iter);
            cmp(reg_n_, 2 * b_ * (pf ? 1 + pf_iters : 1));
            jb(l_done, T_NEAR);
            block_dti(0, false, key_.nt_stores, pf);
            block_dti(1, false, key_.nt_stores);
            if (!scalar[0])
                add(reg_pc_, 2 * b_);
            if (!scalar[1])
                add(reg_pa_, 64);
            if (!scalar[2])
                add(reg_pb_, 64);
            add(reg_pd_, 64 * c_);
            sub(reg_n_, 2 * b_);
            jmp(l_iter, T_NEAR);
            L(l_done);
        }

        Label l_tail, l_end;
        L(l_tail);
        test(reg_n_, reg_n_);
        jz(l_end, T_NEAR);
        const Reg64 ps[3] = { reg_pc_, reg_pa_, reg_pb_ };
        const Reg64 strides[3] = { reg_ic_, reg_ia_, reg_ib_ };
        // After a full iteration, the columns left run as the call's last
        // 2B columns, some of them a second time, with regular stores.
        Label l_bytes;
        cmp(reg_pd_, arg(offsetof(select_call_args, dst)));
        je(l_bytes, T_NEAR);
        mov(reg_u_, 2 * b_);
        sub(reg_u_, reg_n_); // columns back
        for (int op = 0; op < 3; ++op) {
            if (scalar[op])
                continue;
            imul(reg_v_, reg_u_, in_bytes(op));
            sub(ps[op], reg_v_);
        }
        imul(reg_v_, reg_u_, c_ * es_);
        sub(reg_pd_, reg_v_);
        block_dti(0, false, false);
        block_dti(1, false, false);
        jmp(l_end, T_NEAR);

        // Fewer columns than one iteration: each vector input's rows, their
        // columns into its tail rows (2B elements apart), read from there.
        L(l_bytes);
        for (int op = 0; op < 3; ++op) {
            if (scalar[op])
                continue;
            const int64_t pitch = 2 * b_ * in_bytes(op);
            imul(reg_u_, reg_n_, in_bytes(op));
            mov(reg_q_, ps[op]);
            for (int r = 0; r < c_; ++r) {
                copy_bytes(rsp + tail_off(op) + pitch * r, reg_q_);
                if (r + 1 < c_)
                    add(reg_q_, strides[op]);
            }
            lea(ps[op], ptr[rsp + tail_off(op)]);
            mov(strides[op], pitch);
        }
        block_dti(0, true, false);
        block_dti(1, true, false);
        imul(reg_u_, reg_n_, c_ * es_);
        copy_bytes(reg_pd_, rsp + out_off());
        L(l_end);
    }

    void body() override {
        if (inter_)
            generate_dti();
        else
            generate_dt();
    }

    const bool inter_;
    const int h_;
    const bool spill_;
};

} // namespace

bool dst_transposed_packed_supported(const kernel_key &k) {
    const bool w248 = k.elem_size == 2 || k.elem_size == 4 || k.elem_size == 8;
    const bool avx2 = k.isa == kernel_isa::avx2;
    if (k.dt_rows) {
        const int most = avx2 ? max_packed_lanes_avx2
                         : k.isa == kernel_isa::avx512_core && w248
                                 ? max_packed_dt_cols
                                 : 0;
        const bool word_quads =
                avx2 && k.elem_size == 2
                && (k.dt_rows <= max_packed_dt_cols
                    || (k.dt_rows % 4 == 0
                        && k.dt_rows <= max_packed_word_quads_avx2));
        return !k.dt_cols && (w248 || k.elem_size == 1) && k.dt_rows >= 2
               && (k.dt_rows <= most || word_quads);
    }
    if (k.cond_scalar || k.src0_scalar || k.dt_cols < 2)
        return false;
    // AVX2's prefetch is the interleave's.
    if (avx2 && k.dt_prefetch)
        return false;
    // 2-byte elements from 8 channels: quadwords (no register holds a
    // block), to 15 as on AVX-512.
    if (avx2 && k.elem_size == 2 && k.dt_cols >= 8)
        return k.dt_cols <= max_packed_dt_cols;
    if (avx2)
        return k.elem_size == 1 ? k.dt_cols <= max_packed_byte_quads_avx2
                                : w248 && k.dt_cols <= max_packed_lanes_avx2;
    if (k.isa != kernel_isa::avx512_core)
        return false;
    if (k.elem_size != 2 && k.elem_size != 4 && k.elem_size != 8)
        return false;
    return k.dt_cols <= max_packed_dt_cols && k.dt_cols <= 64 / k.elem_size;
}

std::shared_ptr<const select_kernel>
create_jit_select_dt_packed_kernel(const kernel_key &key) {
    // The quads: 4-byte elements of 4, 8 or 12 channels, 2-byte ones from
    // 8 (of 4, a pixel a quadword, the lanes kernel ran them 1.15-1.3x as
    // fast), 1-byte ones past the lanes kernel's 10 (8: its dwords).
    if (key.isa == kernel_isa::avx2 && key.dt_cols
        && ((key.elem_size == 4 && key.dt_cols % 4 == 0)
            || (key.elem_size == 2 && key.dt_cols >= 8)
            || (key.elem_size == 1
                && key.dt_cols > max_packed_lanes_avx2_e1_cols)))
        return make_jit_kernel<jit_select_dt_quads_avx2_t>(key);
    if (key.isa == kernel_isa::avx2
        && (key.dt_rows || key.elem_size <= 2
            || key.dt_cols > max_packed_dt_cols_avx2))
        return make_jit_kernel<jit_select_dt_lanes_avx2_t>(key);
    if (key.dt_rows)
        return make_jit_kernel<jit_select_dt_interleave_t>(key);
    if (key.isa == kernel_isa::avx2)
        return make_jit_kernel<jit_select_dt_packed_avx2_t>(key);
    return make_jit_kernel<jit_select_dt_packed_t>(key);
}

} // namespace impl
} // namespace selgraph
