// Xbyak generator of the Select kernels that write a transposed dst
// themselves (kernel_key::dst_transposed; ABI: select_kernel.hpp): AVX-512
// and AVX2 (below) with 4- and 2-byte elements, any rows
// and columns, cond a vector along the rows, src_0 a vector, src_1 a vector
// or one element per row.
//
// A transposed dst is contiguous along the rows of the tile (a channels-last
// dst over NCHW inputs: the rows are the channels). The general path runs
// the row kernel into a scratch tile and transposes the tile into dst
// (src/parallel_execute.cpp); this kernel selects and transposes in
// registers instead, so each input is read and dst written once, in one
// pass:
//
//   for each block of 16 rows, for each block of 16 columns:
//     16 rows of 16 elements: vptestmb on the 16 cond bytes of the row,
//     vpblendmd between src_1 (loaded or broadcast) and src_0 (from memory);
//     a 16 x 16 transpose of 32-bit lanes in four stages (vpunpck{l,h}dq,
//     vpunpck{l,h}qdq, then vshufi32x4 twice), after which register j holds
//     the block's 16 rows at column j: one 64-byte piece of dst row j,
//     stored whole.
//
// A block of 16 rows reads 16 lines of each input at a time and sweeps the
// columns, so the inputs stream in 16 runs each. On the 2-vCPU Intel Xeon
// guest an intrinsics model of this loop ran L5's shape (f32 [16, 64, 56,
// 56] into an NHWC dst) at 0.65-0.68 of the dense Select, against 0.5 for
// the row kernel and the dst transpose one after the other; sweeping all 64
// rows per column block instead (so that dst is written in address order)
// ran at 0.33-0.44, and software prefetch of the rows ahead only slowed it;
// this kernel ran L5 at 0.74-0.80 (docs/performance.md). On AMD's Zen 4
// the rows' lines prefetched into L2 (kernel_key::dt_prefetch, below) ran
// 0.5-0.8x the time; the dispatcher picks the variant per CPU.
//
// Tails: the columns past the last full block are loaded under an opmask
// (cond bytes, src_1, and src_0 through the blend's mask, which excludes
// them), and only their dst rows are stored; the rows past the last full
// block are not loaded (their registers are zeroed) and each dst row's
// store is masked to the rows that exist. No byte outside a tensor is read
// or written.
//
// 2-byte elements: blocks of 32 rows by 32 columns, so that each input row
// is read a whole line at a time and each dst piece is still one 64-byte
// line. Each half of 16 rows is selected (vpblendmw under the 32 cond
// bytes' opmask) and transposed in three stages of in-lane unpacks (words,
// 32-bit and 64-bit lanes), after which each 128-bit lane holds 8 rows of
// one column; the first half waits on the stack, and a 4 x 4 transpose of
// 128-bit lanes (vshufi32x4) joins the four 16-byte pieces of each
// column's 32 rows. A first version read 16 columns (half a line) of 32
// rows at a time: on [2048, 2048] (rows 4 KiB apart, all in one L1 set)
// the second half of each line had been evicted by the time it was read,
// and the kernel ran 1.5x longer than the scratch path (docs/performance.md).
// It runs on Zen 4 and Zen 5 only (the dispatcher's choice, cpu_tuning):
// on an Intel Xeon an intrinsics model of it had run slower than the
// scratch path. On Zen 5 it ran faster from the caches but slower from
// DRAM, where the store tuner picks dst's transpose from the scratch
// instead (store_kind::nt_transpose).
//
// Non-temporal variant: the pieces of full row blocks are streamed
// (vmovntdq); the caller guarantees dst and dst_stride are multiples of 64
// bytes, so each is one whole cache line. The masked pieces of a row tail
// are stored as regular stores.
#include <xbyak/xbyak.h>

#include "jit_generator.hpp"
#include "jit_lanes.hpp"
#include "jit_select.hpp"
#include "src/common.hpp"

namespace selgraph {
namespace impl {

namespace {

using namespace Xbyak;

// Each row of a block prefetches its inputs' lines this many columns on
// into L2 (prefetcht2; up to the row's last full block). A block reads one
// short run of each of 16 or 32 rows, more runs than the hardware
// prefetchers follow. On the Zen 4 guest, 1 thread, L5, L13 and L20 (a
// channels-last dst, a [2048, 2048] one) ran 0.5-0.8x the time with it,
// under both ISAs and at both element sizes; 64 and 256 columns measured
// within noise of 128, prefetcht0 slower than none (docs/performance.md).
constexpr int dt_prefetch_cols = 128;

// Into L2, `pf` columns on from a row's pointers (cond's at pc, src_0's
// at pa, src_1's at pb unless it is one element per row): its lines.
void prefetch_row(CodeGenerator &g, const kernel_key &key, const Reg64 &pc,
                  const Reg64 &pa, const Reg64 &pb, const Reg64 &pf) {
    const int w = key.elem_size;
    g.prefetcht2(g.ptr[pa + pf * w]);
    if (!key.src1_scalar)
        g.prefetcht2(g.ptr[pb + pf * w]);
    g.prefetcht2(g.ptr[pc + pf]);
}

// The row pointers of a column block: cond's (pc), src_0's (pa) and
// src_1's (pb; src_1 itself where it is one element per row) at column j
// of the row block at the bases.
struct block_regs {
    Reg64 cond, src0, src1, j, pc, pa, pb;
};
void block_pointers(CodeGenerator &g, const kernel_key &key,
                    const block_regs &r) {
    const int w = key.elem_size;
    g.lea(r.pc, g.ptr[r.cond + r.j]);
    g.lea(r.pa, g.ptr[r.src0 + r.j * w]);
    if (key.src1_scalar)
        g.mov(r.pb, r.src1);
    else
        g.lea(r.pb, g.ptr[r.src1 + r.j * w]);
}

class jit_select_dt_t : public jit_generator<select_kernel> {
public:
    explicit jit_select_dt_t(const kernel_key &key)
        : jit_generator(key, 8192)
        , w_(key.elem_size)
        , rb_(64 / key.elem_size)
        , cb_(key.elem_size == 2 ? 32 : blk) {
        generate();
        ready();
    }

private:
    static constexpr int blk = 16; // columns of a block; 4-byte: rows too

    const Reg64 reg_param_ = rdi; // spilled; then reg_pf_
    const Reg64 reg_pf_ = rdi;    // a full block's prefetch distance
    const Reg64 reg_cond_ = r8;   // row block bases of the inputs
    const Reg64 reg_src0_ = r9;
    const Reg64 reg_src1_ = r10;
    const Reg64 reg_col_dst_ = r11; // dst row of the column block
    const Reg64 reg_n_ = rcx;
    const Reg64 reg_rows_ = rdx; // rows left, from this row block on
    const Reg64 reg_j_ = rax;    // the column block's first column
    const Reg64 reg_pc_ = rsi;   // cond row pointer; then the dst pointer
    const Reg64 reg_pa_ = rbx;   // src_0 row pointer; then columns left
    const Reg64 reg_pb_ = r12;   // src_1 row pointer
    const Reg64 reg_cs_ = r13;   // row strides
    const Reg64 reg_as_ = r14;
    const Reg64 reg_bs_ = r15;
    const Reg64 reg_ld_ = rbp; // dst bytes between columns
    // [rsp]: dst at the current row block's first row.
    const Opmask k_sel_ = k1, k_cols_ = k2, k_rows_ = k3;

    static Zmm row(int i) { return Zmm(i); }
    static Zmm tmp(int i) { return Zmm(16 + i); }

    // The block of the rows and columns at reg_j_, selected, transposed
    // and stored into dst rows from reg_col_dst_ on.
    void block(bool rows_tail, bool cols_tail) {
        if (cols_tail) {
            mov(reg_pa_, reg_n_);
            sub(reg_pa_, reg_j_);
            mov(reg_pb_, w_ == 2 ? 0xffffffff : 0xffff);
            bzhi(reg_pb_, reg_pb_, reg_pa_);
            if (w_ == 2)
                kmovd(k_cols_, reg_pb_.cvt32());
            else
                kmovw(k_cols_, reg_pb_.cvt32());
        }
        block_pointers(*this, key_,
                       { reg_cond_, reg_src0_, reg_src1_, reg_j_, reg_pc_,
                         reg_pa_, reg_pb_ });
        if (w_ == 2) {
            block_words(rows_tail, cols_tail);
            return;
        }
        load_rows(0, false, rows_tail, cols_tail);
        transpose();
        mov(reg_pc_, reg_col_dst_);
        if (cols_tail) {
            mov(reg_pa_, reg_n_);
            sub(reg_pa_, reg_j_);
        }
        Label l_stored;
        for (int j = 0; j < blk; ++j) {
            if (cols_tail && j > 0) {
                cmp(reg_pa_, j);
                jbe(l_stored, T_NEAR);
            }
            store_piece(ptr[reg_pc_], row(j), rows_tail);
            add(reg_pc_, reg_ld_);
        }
        L(l_stored);
        if (!cols_tail)
            mov(reg_col_dst_, reg_pc_);
    }

    // One 64-byte dst piece, of the rows that exist in a row tail, streamed
    // in the nt variant's full blocks.
    void store_piece(const Address &a, const Zmm &v, bool rows_tail) {
        if (rows_tail && w_ == 2)
            vmovdqu16(a | k_rows_, v);
        else if (rows_tail)
            vmovdqu32(a | k_rows_, v);
        else if (key_.nt_stores)
            vmovntdq(a, v);
        else
            vmovdqu32(a, v);
    }

    // 2-byte elements: rows 16 h .. 16 h + 15 of the block (32 columns)
    // selected into zmm0-15, one whole line of each input row each, and
    // transposed in three stages of in-lane unpacks into zmm16-31:
    // register 16 + 8 s + c holds, in 128-bit lane k, column 8 k + c of
    // the half's rows 8 s .. 8 s + 7. A row tail's rows at or past
    // reg_rows_ are zeros.
    void half_words(int h, bool rows_tail, bool cols_tail) {
        // After half 0's last row, on to half 1's first.
        load_rows(blk * h, h == 0, rows_tail, cols_tail);
        // Pairs of rows, words interleaved: in lane k, column 8 k + m of
        // rows 2p and 2p + 1 in 32-bit lane m (columns 8 k .. 8 k + 3 in
        // tmp(2p), 8 k + 4 .. 8 k + 7 in tmp(2p + 1)).
        for (int p = 0; p < blk / 2; ++p) {
            vpunpcklwd(tmp(2 * p), row(2 * p), row(2 * p + 1));
            vpunpckhwd(tmp(2 * p + 1), row(2 * p), row(2 * p + 1));
        }
        // Quads of rows, 32-bit lanes interleaved: row(4q + m) holds, in
        // lane k, columns 8 k + 2m and 8 k + 2m + 1 of rows 4q .. 4q + 3.
        for (int q = 0; q < blk / 4; ++q)
            for (int hi = 0; hi < 2; ++hi) {
                const Zmm a = tmp(4 * q + hi), b = tmp(4 * q + 2 + hi);
                vpunpckldq(row(4 * q + 2 * hi), a, b);
                vpunpckhdq(row(4 * q + 2 * hi + 1), a, b);
            }
        // Eights of rows, 64-bit lanes interleaved: tmp(8s + c) holds, in
        // lane k, column 8 k + c of rows 8s .. 8s + 7.
        for (int s2 = 0; s2 < 2; ++s2)
            for (int m = 0; m < 4; ++m) {
                const Zmm a = row(8 * s2 + m), b = row(8 * s2 + 4 + m);
                vpunpcklqdq(tmp(8 * s2 + 2 * m), a, b);
                vpunpckhqdq(tmp(8 * s2 + 2 * m + 1), a, b);
            }
    }

    // 2-byte elements: a block of 32 rows by 32 columns, in two halves of
    // 16 rows (half_words); the first half's registers wait on the stack.
    // Then, for each c < 8, the four registers of column 8 k + c (rows 0-7
    // and 8-15 from the stack, 16-23 and 24-31) hold its four 16-byte
    // pieces in lane k: a 4 x 4 transpose of 128-bit lanes makes each
    // column's 64-byte dst piece, stored whole.
    void block_words(bool rows_tail, bool cols_tail) {
        half_words(0, rows_tail, cols_tail);
        for (int i = 0; i < blk; ++i)
            vmovdqa64(ptr[rsp + stage_off + 64 * i], tmp(i));
        if (rows_tail) {
            // A row tail of 16 rows or fewer: the second half's transposes
            // are zeros (half_words(1) runs only where row 16 exists).
            Label l_half1, l_halves;
            cmp(reg_rows_, blk);
            ja(l_half1, T_NEAR);
            for (int i = 0; i < blk; ++i)
                vpxord(tmp(i), tmp(i), tmp(i));
            jmp(l_halves, T_NEAR);
            L(l_half1);
            half_words(1, true, cols_tail);
            L(l_halves);
        } else {
            half_words(1, false, cols_tail);
        }
        // Columns left (a column tail) and dst's column pointers.
        if (cols_tail) {
            mov(reg_pa_, reg_n_);
            sub(reg_pa_, reg_j_);
        }
        mov(reg_pb_, reg_col_dst_);
        for (int c = 0; c < 8; ++c) {
            const Zmm u0 = row(0), u1 = row(1), v0 = row(2), v1 = row(3);
            const Zmm x0 = row(4);
            const Address x1 = ptr[rsp + stage_off + 64 * (8 + c)];
            vmovdqa64(x0, ptr[rsp + stage_off + 64 * c]);
            vshufi32x4(u0, x0, x1, 0x88);
            vshufi32x4(u1, x0, x1, 0xdd);
            vshufi32x4(v0, tmp(c), tmp(8 + c), 0x88);
            vshufi32x4(v1, tmp(c), tmp(8 + c), 0xdd);
            // Lane k of the four: column 8 k + c (k = 0, 2 from u0, v0;
            // 1, 3 from u1, v1).
            const Zmm out[4] = { row(8), row(9), row(10), row(11) };
            vshufi32x4(out[0], u0, v0, 0x88);
            vshufi32x4(out[2], u0, v0, 0xdd);
            vshufi32x4(out[1], u1, v1, 0x88);
            vshufi32x4(out[3], u1, v1, 0xdd);
            mov(reg_pc_, reg_pb_);
            for (int k = 0; k < 4; ++k) {
                Label l_skip;
                if (cols_tail && 8 * k + c > 0) {
                    cmp(reg_pa_, 8 * k + c);
                    jbe(l_skip, T_NEAR);
                }
                store_piece(ptr[reg_pc_], out[k], rows_tail);
                L(l_skip);
                if (k < 3)
                    lea(reg_pc_, ptr[reg_pc_ + reg_ld_ * 8]);
            }
            if (c < 7)
                add(reg_pb_, reg_ld_);
        }
        if (!cols_tail)
            for (int k = 0; k < 4; ++k)
                lea(reg_col_dst_, ptr[reg_col_dst_ + reg_ld_ * 8]);
    }

    // Rows r0 .. r0 + 15 of the block at the pointers, selected into
    // zmm0-15 (register i: row r0 + i; a row tail's rows at or past
    // reg_rows_ zeros; row r0 exists); the pointers end on the last row
    // loaded, or past it with `advance_last`.
    void load_rows(int r0, bool advance_last, bool rows_tail, bool cols_tail) {
        const bool words = w_ == 2;
        Label l_zero[blk], l_loaded;
        for (int i = 0; i < blk; ++i) {
            if (rows_tail && i > 0) {
                cmp(reg_rows_, r0 + i);
                jbe(l_zero[i], T_NEAR);
            }
            // cond: one byte per element, 16 (xmm) or 32 (ymm) of them.
            const Ymm yc = Ymm(16 + (i & 1));
            const Xmm xc = Xmm(yc.getIdx());
            const Xmm &vc = words ? static_cast<const Xmm &>(yc) : xc;
            const Zmm vb = tmp(2 + (i & 1));
            if (cols_tail)
                vmovdqu8(vc | k_cols_ | T_z, ptr[reg_pc_]);
            else
                vmovdqu8(vc, ptr[reg_pc_]);
            const Opmask kt = cols_tail ? k_sel_ | k_cols_ : k_sel_;
            if (key_.invert_cond)
                vptestnmb(kt, vc, vc);
            else
                vptestmb(kt, vc, vc);
            if (key_.src1_scalar && words)
                vpbroadcastw(vb, ptr[reg_pb_]);
            else if (key_.src1_scalar)
                vpbroadcastd(vb, ptr[reg_pb_]);
            else if (words && cols_tail)
                vmovdqu16(vb | k_cols_ | T_z, ptr[reg_pb_]);
            else if (words)
                vmovdqu16(vb, ptr[reg_pb_]);
            else if (cols_tail)
                vmovdqu32(vb | k_cols_ | T_z, ptr[reg_pb_]);
            else
                vmovdqu32(vb, ptr[reg_pb_]);
            // Lanes past the columns are off in k_sel_: never loaded.
            if (words)
                vpblendmw(row(i) | k_sel_, vb, ptr[reg_pa_]);
            else
                vpblendmd(row(i) | k_sel_, vb, ptr[reg_pa_]);
            if (!cols_tail && key_.dt_prefetch)
                prefetch_row(*this, key_, reg_pc_, reg_pa_, reg_pb_, reg_pf_);
            if (advance_last || i + 1 < blk) {
                add(reg_pc_, reg_cs_);
                add(reg_pa_, reg_as_);
                add(reg_pb_, reg_bs_);
            }
        }
        if (rows_tail) {
            jmp(l_loaded, T_NEAR);
            for (int i = 1; i < blk; ++i) {
                L(l_zero[i]);
                vpxord(row(i), row(i), row(i));
            }
            L(l_loaded);
        }
    }

    // zmm0-15 (rows) -> zmm0-15 (columns), through zmm16-31.
    void transpose() {
        // Pairs of rows: 32-bit lanes interleaved.
        for (int i = 0; i < blk; i += 2) {
            vpunpckldq(tmp(i), row(i), row(i + 1));
            vpunpckhdq(tmp(i + 1), row(i), row(i + 1));
        }
        // Quads: 64-bit lanes interleaved; in each 128-bit lane, register
        // 4q + m now holds column 4 * lane + m of rows 4q .. 4q + 3.
        for (int i = 0; i < blk; i += 4) {
            vpunpcklqdq(row(i), tmp(i), tmp(i + 2));
            vpunpckhqdq(row(i + 1), tmp(i), tmp(i + 2));
            vpunpcklqdq(row(i + 2), tmp(i + 1), tmp(i + 3));
            vpunpckhqdq(row(i + 3), tmp(i + 1), tmp(i + 3));
        }
        // 128-bit lanes: quads 0 and 1 (2 and 3) joined by even and odd
        // lanes, then the halves of 0-1 and 2-3.
        for (int i = 0; i < blk / 2; ++i) {
            const int a = (i / 4) * 8 + (i % 4), b = a + 4;
            vshufi32x4(tmp(a), row(a), row(b), 0x88);
            vshufi32x4(tmp(b), row(a), row(b), 0xdd);
        }
        for (int i = 0; i < blk / 2; ++i) {
            vshufi32x4(row(i), tmp(i), tmp(i + 8), 0x88);
            vshufi32x4(row(i + 8), tmp(i), tmp(i + 8), 0xdd);
        }
    }

    // The column blocks of one row block.
    void columns(bool rows_tail) {
        Label l_cols, l_tail, l_done;
        mov(reg_col_dst_, ptr[rsp]);
        xor_(reg_j_, reg_j_);
        L(l_cols);
        mov(reg_pa_, reg_n_);
        sub(reg_pa_, reg_j_);
        cmp(reg_pa_, cb_);
        jb(l_tail, T_NEAR);
        if (key_.dt_prefetch) {
            // The prefetch distance: dt_prefetch_cols, fewer where the rows
            // end sooner (no line past a row's last block is prefetched).
            lea(reg_pf_, ptr[reg_pa_ - cb_]);
            mov(reg_pc_, dt_prefetch_cols);
            cmp(reg_pf_, reg_pc_);
            cmova(reg_pf_, reg_pc_);
        }
        block(rows_tail, false);
        add(reg_j_, cb_);
        jmp(l_cols, T_NEAR);
        L(l_tail);
        test(reg_pa_, reg_pa_);
        jz(l_done, T_NEAR);
        block(rows_tail, true);
        L(l_done);
    }

    void generate() {
        push_saved({ rbx, rbp, r12, r13, r14, r15 });
        // A 64-byte aligned frame; the caller's rsp at [rsp + 8].
        mov(rax, rsp);
        and_(rsp, -64);
        sub(rsp, stage_off + (w_ == 2 ? 64 * blk : 0));
        mov(ptr[rsp + 8], rax);
        mov(ptr[rsp + 16], reg_param_);
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        mov(reg_cond_, arg(offsetof(select_call_args, cond)));
        mov(reg_src0_, arg(offsetof(select_call_args, src0)));
        mov(reg_src1_, arg(offsetof(select_call_args, src1)));
        mov(reg_pc_, arg(offsetof(select_call_args, dst)));
        mov(ptr[rsp], reg_pc_);
        mov(reg_n_, arg(offsetof(select_call_args, n)));
        mov(reg_rows_, arg(offsetof(select_call_args, rows)));
        mov(reg_cs_, arg(offsetof(select_call_args, cond_stride)));
        mov(reg_as_, arg(offsetof(select_call_args, src0_stride)));
        mov(reg_bs_, arg(offsetof(select_call_args, src1_stride)));
        mov(reg_ld_, arg(offsetof(select_call_args, dst_stride)));

        Label l_rows, l_rows_tail, l_end;
        L(l_rows);
        cmp(reg_rows_, rb_);
        jb(l_rows_tail, T_NEAR);
        columns(false);
        // The next row block: rb_ rows on, 64 bytes on in dst.
        const Reg64 bases[] = { reg_cond_, reg_src0_, reg_src1_ };
        const Reg64 strides[] = { reg_cs_, reg_as_, reg_bs_ };
        for (int k = 0; k < 3; ++k) {
            mov(reg_pc_, strides[k]);
            shl(reg_pc_, rb_ == 32 ? 5 : 4);
            add(bases[k], reg_pc_);
        }
        add(qword[rsp], rb_ * w_);
        sub(reg_rows_, rb_);
        jnz(l_rows, T_NEAR);
        jmp(l_end, T_NEAR);

        L(l_rows_tail);
        mov(reg_pc_, rb_ == 32 ? 0xffffffff : 0xffff);
        bzhi(reg_pc_, reg_pc_, reg_rows_);
        if (rb_ == 32)
            kmovd(k_rows_, reg_pc_.cvt32());
        else
            kmovw(k_rows_, reg_pc_.cvt32());
        columns(true);

        L(l_end);
        if (key_.nt_stores)
            mov(reg_param_, ptr[rsp + 16]);
        end_vector_code(reg_param_);
        mov(rsp, ptr[rsp + 8]);
        pop_saved();
        ret();
    }

    // The frame: [rsp] dst at the current row block's first row, [rsp + 8]
    // the caller's rsp; 2-byte elements: from stage_off, a block's first
    // 16 rows after their transposes (16 registers).
    static constexpr int stage_off = 64;

    const int w_;  // element bytes, 2 or 4
    const int rb_; // rows of a block: one 64-byte dst piece per column
    const int cb_; // columns of a block: one input line (2-byte) or 16
};

// AVX2, 4-byte elements: blocks of 16 rows by 8 columns, each half of 8
// rows selected into ymm0-7 (vpmovzxbd of 8 cond bytes, vpcmpeqd with
// zero, vpblendvb taking
// src_1 where cond is zero) and transposed in three stages (vunpck{l,h}ps,
// vshufps, vperm2i128) within 16 registers. The first halves of the 8 dst
// lines wait on the stack, and each line's two halves are stored one after
// the other: streamed as they came, the second half a half-block later,
// the nt variant ran L5 at 2.3-3.4 GB/s against 15-16.5 with regular
// stores (partial lines flushed from the write-combining buffers), and the
// regular variant, holding them too, ran 1.01-1.54x its speed storing each
// half where it belonged, on 5 of 6 shapes from the caches (f32 planes
// [197, 197] to [2047, 2047]; [100, 100] 0.75-0.86x; docs/performance.md).
//
// Tails, as on AVX-512 but without opmasks: a column tail's cond bytes,
// src_0 and src_1 elements are inserted one at a time (vpinsrb, vpinsrd)
// and only its dst lines are stored; the rows past the last full block
// are not loaded (their registers are zeroed), and a row tail's dst
// pieces are stored 4 rows (16 bytes) at a time while those exist, the
// rest one element at a time (vpextrd), the second half not at all where
// 8 rows or fewer remain. No load or store reaches
// past a tensor, masked or not: vpmaskmovd would rely on masked-off lanes
// not faulting, which AMD documents as implementation-dependent.
//
// 2-byte elements: blocks of 32 rows by 32 columns, as on AVX-512, in four
// groups of 8 rows transposed by in-lane unpacks (transpose_words_in_lanes,
// jit_lanes.hpp) and joined through the stack (block_words). On the Zen 4 guest
// under the AVX2 cap, 1 thread, L13 bf16 (an NHWC dst over NCHW inputs) ran
// 0.62x the time of the scratch path, L5 0.73x; from DRAM 0.71x and 0.84x
// (docs/performance.md, "AVX2's transposed dst of 2-byte elements in one
// pass").
class jit_select_dt_avx2_t : public jit_generator<select_kernel> {
public:
    explicit jit_select_dt_avx2_t(const kernel_key &key)
        : jit_generator(key, key.elem_size == 2 ? 65536 : 8192)
        , w_(key.elem_size)
        , rb_(64 / key.elem_size)
        , cb_(key.elem_size == 2 ? 32 : 8)
        , frame_(key.elem_size == 2 ? words_frame : frame) {
        generate();
        ready();
    }

private:
    const Reg64 reg_param_ = rdi; // spilled; then the columns left (tails)
    const Reg64 reg_cols_ = rdi;
    const Reg64 reg_pf_ = rdi; // a full block's prefetch distance
    const Reg64 reg_cond_ = r8;
    const Reg64 reg_src0_ = r9;
    const Reg64 reg_src1_ = r10;
    const Reg64 reg_col_dst_ = r11;
    const Reg64 reg_n_ = rcx;
    const Reg64 reg_rows_ = rdx;
    const Reg64 reg_j_ = rax;
    const Reg64 reg_pc_ = rsi;
    const Reg64 reg_pa_ = rbx;
    const Reg64 reg_pb_ = r12;
    const Reg64 reg_cs_ = r13;
    const Reg64 reg_as_ = r14;
    const Reg64 reg_bs_ = r15;
    const Reg64 reg_ld_ = rbp;
    const Ymm vzero_ = Ymm(15), vcond_ = Ymm(14), vb_ = Ymm(13);
    // The stack frame: [rsp] dst at the row block's first row; [rsp + 8]
    // the argument pointer; from stage_off, the first halves of a column
    // block's 8 dst lines (the frame keeps rsp 16-byte aligned).
    static constexpr int param_off = 8;
    static constexpr int stage_off = 16;
    static constexpr int frame = stage_off + 8 * 32 + 8;
    // 2-byte elements (block_words): [rsp + 16], [rsp + 24] rcx and rbp
    // while a column tail's rows are copied, [rsp + 32] the columns it
    // copies 8 at a time; from rowbuf_off, a group's 8
    // selected rows of the block's second 16 columns; from slot_off, the
    // transposed groups (slot_words); from line_off, a row tail's dst
    // line; from in_off, a column tail's group of 8 input rows (in_row
    // bytes each: cond, src_0, src_1, 64 bytes apiece). Under a page.
    static constexpr int save_rcx_off = 16;
    static constexpr int save_rbp_off = 24;
    static constexpr int chunks_off = 32; // a column tail's columns, & -8
    static constexpr int rowbuf_off = 48;
    static constexpr int slot_off = rowbuf_off + 8 * 32;
    static constexpr int line_off = slot_off + 4 * 2 * 8 * 32;
    static constexpr int in_off = line_off + 64;
    static constexpr int in_row = 3 * 64;
    static constexpr int words_frame = in_off + 8 * in_row + 8;
    static_assert(words_frame % 16 == 8 && words_frame < 4096,
                  "the frame keeps rsp 16-byte aligned, within a page");

    const int w_;     // element bytes, 2 or 4
    const int rb_;    // rows of a block: one 64-byte dst line per column
    const int cb_;    // columns of a block
    const int frame_; // the stack frame's bytes

    // The row at reg_pc_ (cond), reg_pa_ and reg_pb_ of a column tail, its
    // reg_cols_ (1-7) elements inserted one at a time: cond into vcond_
    // (as vpmovzxbd would), the first operand of the blend into `r`, the
    // second into vb_ (broadcast where it is a scalar src_1). Through
    // xmm8-10, the transpose's temporaries.
    void tail_row(const Ymm &r) {
        const Xmm xc(10), r_hi(8), b_hi(9);
        const Xmm r_lo(r.getIdx()), b_lo(vb_.getIdx());
        const bool inv = key_.invert_cond != 0;
        // Operand `b` (src_1's slot) is broadcast where it is a scalar.
        const bool first_scalar = inv && key_.src1_scalar;
        const bool second_scalar = !inv && key_.src1_scalar;
        const Reg64 &p_first = inv ? reg_pb_ : reg_pa_;
        const Reg64 &p_second = inv ? reg_pa_ : reg_pb_;
        vpxor(xc, xc, xc);
        if (!first_scalar) {
            vpxor(r_lo, r_lo, r_lo);
            vpxor(r_hi, r_hi, r_hi);
        }
        if (!second_scalar) {
            vpxor(b_lo, b_lo, b_lo);
            vpxor(b_hi, b_hi, b_hi);
        }
        Label l_done;
        for (int k = 0; k < 7; ++k) {
            if (k > 0) {
                cmp(reg_cols_, k);
                jbe(l_done, T_NEAR);
            }
            vpinsrb(xc, xc, ptr[reg_pc_ + k], k);
            if (!first_scalar)
                vpinsrd(k < 4 ? r_lo : r_hi, k < 4 ? r_lo : r_hi,
                        ptr[p_first + 4 * k], k & 3);
            if (!second_scalar)
                vpinsrd(k < 4 ? b_lo : b_hi, k < 4 ? b_lo : b_hi,
                        ptr[p_second + 4 * k], k & 3);
        }
        L(l_done);
        vpmovzxbd(vcond_, xc);
        if (first_scalar)
            vpbroadcastd(r, ptr[p_first]);
        else
            vinserti128(r, r, r_hi, 1);
        if (second_scalar)
            vpbroadcastd(vb_, ptr[p_second]);
        else
            vinserti128(vb_, vb_, b_hi, 1);
    }

    // The row pointers at the row block's first row, column reg_j_.
    void block_pointers() {
        impl::block_pointers(*this, key_,
                             { reg_cond_, reg_src0_, reg_src1_, reg_j_, reg_pc_,
                               reg_pa_, reg_pb_ });
    }

    // Rows `half` * 8 .. + 7 of the column block at reg_j_, selected into
    // ymm0-7 and transposed; returns the register of each column. A row
    // tail's rows past reg_rows_ are zeros; a column tail loads
    // reg_cols_ columns.
    void half_block(int half, bool rows_tail, bool cols_tail, int out[8]) {
        block_pointers();
        if (half) {
            // 8 rows on.
            lea(reg_pc_, ptr[reg_pc_ + reg_cs_ * 8]);
            lea(reg_pa_, ptr[reg_pa_ + reg_as_ * 8]);
            lea(reg_pb_, ptr[reg_pb_ + reg_bs_ * 8]);
        }
        Label l_zero[8], l_loaded;
        for (int i = 0; i < 8; ++i) {
            const Ymm r(i);
            if (rows_tail && 8 * half + i > 0) {
                cmp(reg_rows_, 8 * half + i);
                jbe(l_zero[i], T_NEAR);
            }
            if (cols_tail)
                tail_row(r);
            else
                vpmovzxbd(vcond_, ptr[reg_pc_]);
            vpcmpeqd(vcond_, vcond_, vzero_);
            // Where cond is zero: src_1, else src_0 (swapped if inverted).
            const Address pa = ptr[reg_pa_];
            const Address pb = ptr[reg_pb_];
            if (cols_tail) {
                vpblendvb(r, r, vb_, vcond_);
            } else if (key_.src1_scalar) {
                vpbroadcastd(vb_, pb);
                if (key_.invert_cond) {
                    vmovdqu(r, vb_);
                    vpblendvb(r, r, pa, vcond_);
                } else {
                    vmovdqu(r, pa);
                    vpblendvb(r, r, vb_, vcond_);
                }
            } else {
                vmovdqu(r, key_.invert_cond ? pb : pa);
                vpblendvb(r, r, key_.invert_cond ? pa : pb, vcond_);
            }
            if (!cols_tail && key_.dt_prefetch)
                prefetch_row(*this, key_, reg_pc_, reg_pa_, reg_pb_, reg_pf_);
            if (i + 1 < 8) {
                add(reg_pc_, reg_cs_);
                add(reg_pa_, reg_as_);
                add(reg_pb_, reg_bs_);
            }
        }
        if (rows_tail) {
            jmp(l_loaded, T_NEAR);
            for (int i = 0; i < 8; ++i) {
                L(l_zero[i]);
                vpxor(Ymm(i), Ymm(i), Ymm(i));
            }
            L(l_loaded);
        }
        // Stage 1: pairs of rows, 32-bit lanes interleaved.
        const int t[8] = { 8, 9, 10, 11, 12, 13, 0, 1 };
        for (int i = 0; i < 8; i += 2) {
            vunpcklps(Ymm(t[i]), Ymm(i), Ymm(i + 1));
            vunpckhps(Ymm(t[i + 1]), Ymm(i), Ymm(i + 1));
        }
        // Stage 2: quads; register s[4q + m] holds, in each 128-bit lane,
        // column 4 * lane + m of rows 4q .. 4q + 3.
        const int sq[8] = { 2, 3, 4, 5, 6, 7, 8, 9 };
        for (int q = 0; q < 2; ++q) {
            const int *tt = t + 4 * q;
            const int *sd = sq + 4 * q;
            vshufps(Ymm(sd[0]), Ymm(tt[0]), Ymm(tt[2]), 0x44);
            vshufps(Ymm(sd[1]), Ymm(tt[0]), Ymm(tt[2]), 0xee);
            vshufps(Ymm(sd[2]), Ymm(tt[1]), Ymm(tt[3]), 0x44);
            vshufps(Ymm(sd[3]), Ymm(tt[1]), Ymm(tt[3]), 0xee);
        }
        // Stage 3: the lanes of quads 0 and 1 joined: column m in the low
        // lanes, column 4 + m in the high ones.
        const int dst_regs[4][2] = {
            { 10, 11 }, { 12, 13 }, { 0, 1 }, { 2, 6 }
        };
        for (int m = 0; m < 4; ++m) {
            vperm2i128(Ymm(dst_regs[m][0]), Ymm(sq[m]), Ymm(sq[4 + m]), 0x20);
            vperm2i128(Ymm(dst_regs[m][1]), Ymm(sq[m]), Ymm(sq[4 + m]), 0x31);
            out[m] = dst_regs[m][0];
            out[4 + m] = dst_regs[m][1];
        }
    }

    // The rows below reg_rows_ of half `half` of dst line reg_pc_, from
    // `v`: its 16-byte pieces of 4 rows whole while they exist, then the
    // rest one element at a time (the high lane through xmm14, vcond_).
    // Element by element throughout, [2, 40, 28, 28] f32 into an NHWC dst
    // (row tails of 8) ran at 0.51 of the dense Select, against 0.73 with
    // AVX-512's masked stores (docs/performance.md).
    void store_rows(int half, const Ymm &v) {
        const Xmm lo(v.getIdx()), hi(vcond_.getIdx());
        const int at = 32 * half;
        Label l_done, l_lo, l_hi;
        cmp(reg_rows_, 8 * half + 4);
        jb(l_lo, T_NEAR);
        vmovdqu(ptr[reg_pc_ + at], lo);
        cmp(reg_rows_, 8 * half + 8);
        jb(l_hi, T_NEAR);
        vextracti128(ptr[reg_pc_ + at + 16], v, 1);
        jmp(l_done, T_NEAR);
        L(l_lo);
        for (int k = 0; k < 4; ++k) {
            if (8 * half + k > 0) {
                cmp(reg_rows_, 8 * half + k);
                jbe(l_done, T_NEAR);
            }
            vpextrd(ptr[reg_pc_ + at + 4 * k], lo, k);
        }
        jmp(l_done, T_NEAR);
        L(l_hi);
        vextracti128(hi, v, 1);
        for (int k = 4; k < 8; ++k) {
            cmp(reg_rows_, 8 * half + k);
            jbe(l_done, T_NEAR);
            vpextrd(ptr[reg_pc_ + at + 4 * k], hi, k & 3);
        }
        L(l_done);
    }

    // One block of 16 rows by 8 columns (a column tail: reg_cols_; 2-byte
    // elements: block_words). Full rows: the first halves of the dst lines
    // are held on the stack and each line's two halves stored one after
    // the other (streamed in the nt variant). A row tail: each half's rows
    // that exist stored by store_rows, the second half skipped where there
    // are none.
    void block(bool rows_tail, bool cols_tail) {
        if (w_ == 2) {
            block_words(rows_tail, cols_tail);
            return;
        }
        Label l_halves_done;
        for (int half = 0; half < 2; ++half) {
            if (rows_tail && half == 1) {
                cmp(reg_rows_, 8);
                jbe(l_halves_done, T_NEAR);
            }
            int out[8];
            half_block(half, rows_tail, cols_tail, out);
            if (!rows_tail && half == 0) {
                for (int j = 0; j < 8; ++j)
                    vmovdqu(ptr[rsp + stage_off + 32 * j], Ymm(out[j]));
                continue;
            }
            mov(reg_pc_, reg_col_dst_);
            Label l_stored;
            for (int j = 0; j < 8; ++j) {
                if (cols_tail && j > 0) {
                    cmp(reg_cols_, j);
                    jbe(l_stored, T_NEAR);
                }
                if (rows_tail) {
                    store_rows(half, Ymm(out[j]));
                } else {
                    vmovdqu(vcond_, ptr[rsp + stage_off + 32 * j]);
                    if (key_.nt_stores) {
                        vmovntdq(ptr[reg_pc_], vcond_);
                        vmovntdq(ptr[reg_pc_ + 32], Ymm(out[j]));
                    } else {
                        vmovdqu(ptr[reg_pc_], vcond_);
                        vmovdqu(ptr[reg_pc_ + 32], Ymm(out[j]));
                    }
                }
                add(reg_pc_, reg_ld_);
            }
            L(l_stored);
        }
        L(l_halves_done);
        if (!cols_tail)
            mov(reg_col_dst_, reg_pc_);
    }

    // 2-byte elements: a block of 32 rows by 32 columns, so that each
    // input row is read a whole line at a time (as on AVX-512: half lines
    // of rows 4 KiB apart would leave the other halves to be evicted) and
    // each dst column's piece is one 64-byte line. In four groups of 8
    // rows: each row's two halves of 16 columns selected (vpmovzxbw of 16
    // cond bytes, vpcmpeqw, vpblendvb), the first into ymm0-7, the second
    // onto the stack (rowbuf_off); each half's 8 rows then transposed in
    // three stages of in-lane unpacks (transpose_words_in_lanes) and
    // stored to the group's slots. A dst line is then four 16-byte pieces,
    // one per group, joined by a load and a vinserti128 per 32 bytes and
    // stored whole
    // (streamed in the nt variant). A column tail's rows are first copied,
    // a group at a time, onto the stack (stage_group) and selected from
    // there; a row tail stores each dst line's rows that exist in whole
    // 16-byte pieces of 8 rows, then a word at a time (store_line_rows).
    // Rows and columns past the tails are never read: their lanes
    // hold stale values that only the dst rows past the tail would take,
    // which are not stored.
    void block_words(bool rows_tail, bool cols_tail) {
        block_pointers();
        Label l_groups_done;
        for (int g = 0; g < 4; ++g) {
            Label l_rows_done;
            if (rows_tail && g > 0) {
                cmp(reg_rows_, 8 * g);
                jbe(l_groups_done, T_NEAR);
            }
            if (cols_tail)
                stage_group(g, rows_tail);
            for (int i = 0; i < 8; ++i) {
                if (rows_tail && i > 0) {
                    cmp(reg_rows_, 8 * g + i);
                    jbe(l_rows_done, T_NEAR);
                }
                select_words(i, cols_tail);
            }
            L(l_rows_done);
            // Each half's 8 rows through the shared in-lane transpose:
            // t[m] holds, in lane k, column 8 k + m of the rows. It runs
            // through ymm8-15, vzero_ too, zeroed again for the next group.
            const Ymm r[8] = { Ymm(0), Ymm(1), Ymm(2), Ymm(3),
                               Ymm(4), Ymm(5), Ymm(6), Ymm(7) };
            const Ymm t[8] = { Ymm(8),  Ymm(9),  Ymm(10), Ymm(11),
                               Ymm(12), Ymm(13), Ymm(14), Ymm(15) };
            for (int h = 0; h < 2; ++h) {
                if (h == 1)
                    for (int i = 0; i < 8; ++i)
                        vmovdqu(r[i], ptr[rsp + rowbuf_off + 32 * i]);
                transpose_words_in_lanes(*this, r, t);
                for (int m = 0; m < 8; ++m)
                    vmovdqu(ptr[rsp + slot_words(g, h, m)], t[m]);
            }
            vpxor(vzero_, vzero_, vzero_);
        }
        L(l_groups_done);
        // dst line c: column c's rows 0-31, its four pieces from the
        // groups' slots.
        mov(reg_pc_, reg_col_dst_);
        Label l_stored;
        const Ymm lo(0), hi(1);
        for (int c = 0; c < 32; ++c) {
            if (cols_tail && c > 0) {
                cmp(reg_cols_, c);
                jbe(l_stored, T_NEAR);
            }
            const int h = c / 16, lane = c % 16 / 8, m = c % 8;
            const auto piece = [&](int g) {
                return ptr[rsp + slot_words(g, h, m) + 16 * lane];
            };
            vmovdqu(Xmm(lo.getIdx()), piece(0));
            vinserti128(lo, lo, piece(1), 1);
            vmovdqu(Xmm(hi.getIdx()), piece(2));
            vinserti128(hi, hi, piece(3), 1);
            if (rows_tail) {
                store_line_rows(lo, hi);
            } else if (key_.nt_stores) {
                vmovntdq(ptr[reg_pc_], lo);
                vmovntdq(ptr[reg_pc_ + 32], hi);
            } else {
                vmovdqu(ptr[reg_pc_], lo);
                vmovdqu(ptr[reg_pc_ + 32], hi);
            }
            add(reg_pc_, reg_ld_);
        }
        L(l_stored);
        if (!cols_tail)
            mov(reg_col_dst_, reg_pc_);
    }

    // The stack offset of group g's transposed half h (columns 16 h ..
    // 16 h + 15), register m: in lane k, column 16 h + 8 k + m of the
    // group's 8 rows.
    static int slot_words(int g, int h, int m) {
        return slot_off + ((g * 2 + h) * 8 + m) * 32;
    }

    // Row i of the current group: columns 0-15 selected into ymm i,
    // columns 16-31 onto the stack (rowbuf_off), from the row pointers
    // (then on to the next row), or from the group's copy on the stack
    // (a column tail).
    void select_words(int i, bool staged) {
        const int in = in_off + in_row * i;
        const auto c_at = [&](int h) {
            return staged ? ptr[rsp + in + 16 * h] : ptr[reg_pc_ + 16 * h];
        };
        const auto a_at = [&](int h) {
            return staged ? ptr[rsp + in + 64 + 32 * h] : ptr[reg_pa_ + 32 * h];
        };
        const auto b_at = [&](int h) {
            return staged ? ptr[rsp + in + 128 + 32 * h]
                          : ptr[reg_pb_ + 32 * h];
        };
        const bool inv = key_.invert_cond != 0;
        if (key_.src1_scalar)
            vpbroadcastw(vb_, b_at(0));
        for (int h = 0; h < 2; ++h) {
            const Ymm r = h == 0 ? Ymm(i) : Ymm(8);
            vpmovzxbw(vcond_, c_at(h));
            vpcmpeqw(vcond_, vcond_, vzero_);
            // Where cond is zero: src_1, else src_0 (swapped if inverted).
            if (key_.src1_scalar && inv) {
                vmovdqa(r, vb_);
                vpblendvb(r, r, a_at(h), vcond_);
            } else if (key_.src1_scalar) {
                vmovdqu(r, a_at(h));
                vpblendvb(r, r, vb_, vcond_);
            } else {
                vmovdqu(r, inv ? b_at(h) : a_at(h));
                vpblendvb(r, r, inv ? a_at(h) : b_at(h), vcond_);
            }
            if (h == 1)
                vmovdqu(ptr[rsp + rowbuf_off + 32 * i], r);
        }
        if (staged)
            return;
        if (key_.dt_prefetch)
            prefetch_row(*this, key_, reg_pc_, reg_pa_, reg_pb_, reg_pf_);
        add(reg_pc_, reg_cs_);
        add(reg_pa_, reg_as_);
        add(reg_pb_, reg_bs_);
    }

    // A column tail (reg_cols_ columns, 1-31): group g's rows that exist
    // (8, or those below reg_rows_ in a row tail) copied from the row
    // pointers onto the stack (in_off), 8 columns at a time, then the
    // last 7 or fewer element by element, the row
    // pointers then on to the next group. Through rax (free in a tail
    // block), rcx and rbp (saved) and xmm0.
    void stage_group(int g, bool rows_tail) {
        const Reg64 n = rax, k = rcx, to = rbp;
        mov(ptr[rsp + save_rcx_off], rcx);
        mov(ptr[rsp + save_rbp_off], rbp);
        if (rows_tail) {
            mov(n, reg_rows_);
            sub(n, 8 * g);
            mov(to, 8);
            cmp(n, to);
            cmova(n, to);
        } else {
            mov(n, 8);
        }
        lea(to, ptr[rsp + in_off]);
        mov(k, reg_cols_);
        and_(k, -8);
        mov(ptr[rsp + chunks_off], k);
        const Xmm x(0);
        Label l_row, l_chunk, l_elems, l_elem, l_copied;
        L(l_row);
        xor_(k, k);
        // 8 columns at a time while they are all in the tail.
        L(l_chunk);
        cmp(k, ptr[rsp + chunks_off]);
        jae(l_elems, T_NEAR);
        vmovq(x, ptr[reg_pc_ + k]);
        vmovq(ptr[to + k], x);
        vmovdqu(x, ptr[reg_pa_ + k * 2]);
        vmovdqu(ptr[to + 64 + k * 2], x);
        if (!key_.src1_scalar) {
            vmovdqu(x, ptr[reg_pb_ + k * 2]);
            vmovdqu(ptr[to + 128 + k * 2], x);
        }
        add(k, 8);
        jmp(l_chunk, T_NEAR);
        // Then one at a time.
        L(l_elems);
        cmp(k, reg_cols_);
        jae(l_copied, T_NEAR);
        L(l_elem);
        vpinsrb(x, x, ptr[reg_pc_ + k], 0);
        vpextrb(ptr[to + k], x, 0);
        vpinsrw(x, x, ptr[reg_pa_ + k * 2], 0);
        vpextrw(ptr[to + 64 + k * 2], x, 0);
        if (!key_.src1_scalar) {
            vpinsrw(x, x, ptr[reg_pb_ + k * 2], 0);
            vpextrw(ptr[to + 128 + k * 2], x, 0);
        }
        inc(k);
        cmp(k, reg_cols_);
        jb(l_elem, T_NEAR);
        L(l_copied);
        if (key_.src1_scalar) {
            vpinsrw(x, x, ptr[reg_pb_], 0);
            vpextrw(ptr[to + 128], x, 0);
        }
        add(reg_pc_, reg_cs_);
        add(reg_pa_, reg_as_);
        add(reg_pb_, reg_bs_);
        add(to, in_row);
        dec(n);
        jnz(l_row, T_NEAR);
        mov(rcx, ptr[rsp + save_rcx_off]);
        mov(rbp, ptr[rsp + save_rbp_off]);
    }

    // A row tail's dst line at reg_pc_ (rows 0-15 in `lo`, 16-31 in
    // `hi`): its reg_rows_ rows (1-31), whole 16-byte pieces of 8 rows
    // while they exist, the rest a word at a time through the stack and
    // rbx, r12 (the row pointers, free once a block is selected).
    void store_line_rows(const Ymm &lo, const Ymm &hi) {
        vmovdqu(ptr[rsp + line_off], lo);
        vmovdqu(ptr[rsp + line_off + 32], hi);
        const Reg64 k = reg_pa_, t = reg_pb_;
        Label l_words, l_word, l_done;
        for (int q = 0; q < 3; ++q) {
            cmp(reg_rows_, 8 * q + 8);
            jb(l_words, T_NEAR);
            const Ymm &v = q < 2 ? lo : hi;
            if (q % 2 == 0)
                vmovdqu(ptr[reg_pc_ + 16 * q], Xmm(v.getIdx()));
            else
                vextracti128(ptr[reg_pc_ + 16 * q], v, 1);
        }
        L(l_words);
        mov(k, reg_rows_);
        and_(k, -8);
        cmp(k, reg_rows_);
        jae(l_done, T_NEAR);
        L(l_word);
        movzx(t.cvt32(), word[rsp + line_off + k * 2]);
        mov(word[reg_pc_ + k * 2], t.cvt16());
        inc(k);
        cmp(k, reg_rows_);
        jb(l_word, T_NEAR);
        L(l_done);
    }

    // The column blocks of one row block.
    void columns(bool rows_tail) {
        Label l_cols, l_tail, l_done;
        mov(reg_col_dst_, ptr[rsp]);
        xor_(reg_j_, reg_j_);
        L(l_cols);
        mov(reg_cols_, reg_n_);
        sub(reg_cols_, reg_j_);
        cmp(reg_cols_, cb_);
        jb(l_tail, T_NEAR);
        if (key_.dt_prefetch) {
            // A full block's prefetch distance (as on AVX-512).
            sub(reg_pf_, cb_);
            mov(reg_pc_, dt_prefetch_cols);
            cmp(reg_pf_, reg_pc_);
            cmova(reg_pf_, reg_pc_);
        }
        block(rows_tail, false);
        add(reg_j_, cb_);
        jmp(l_cols, T_NEAR);
        L(l_tail);
        test(reg_cols_, reg_cols_);
        jz(l_done, T_NEAR);
        block(rows_tail, true);
        L(l_done);
    }

    void generate() {
        push_saved({ rbx, rbp, r12, r13, r14, r15 });
        sub(rsp, frame_);
        const auto arg = [&](size_t off) { return ptr[reg_param_ + off]; };
        mov(reg_cond_, arg(offsetof(select_call_args, cond)));
        mov(reg_src0_, arg(offsetof(select_call_args, src0)));
        mov(reg_src1_, arg(offsetof(select_call_args, src1)));
        mov(reg_pc_, arg(offsetof(select_call_args, dst)));
        mov(ptr[rsp], reg_pc_);
        mov(reg_n_, arg(offsetof(select_call_args, n)));
        mov(reg_rows_, arg(offsetof(select_call_args, rows)));
        mov(reg_cs_, arg(offsetof(select_call_args, cond_stride)));
        mov(reg_as_, arg(offsetof(select_call_args, src0_stride)));
        mov(reg_bs_, arg(offsetof(select_call_args, src1_stride)));
        mov(reg_ld_, arg(offsetof(select_call_args, dst_stride)));
        mov(ptr[rsp + param_off], reg_param_);
        vpxor(vzero_, vzero_, vzero_);

        Label l_rows, l_rows_tail, l_end;
        L(l_rows);
        cmp(reg_rows_, rb_);
        jb(l_rows_tail, T_NEAR);
        columns(false);
        // The next row block: rb_ rows on, 64 bytes on in dst.
        const Reg64 bases[] = { reg_cond_, reg_src0_, reg_src1_ };
        const Reg64 strides[] = { reg_cs_, reg_as_, reg_bs_ };
        for (int k = 0; k < 3; ++k) {
            mov(reg_pc_, strides[k]);
            shl(reg_pc_, rb_ == 32 ? 5 : 4);
            add(bases[k], reg_pc_);
        }
        add(qword[rsp], 64);
        sub(reg_rows_, rb_);
        jmp(l_rows, T_NEAR);

        L(l_rows_tail);
        test(reg_rows_, reg_rows_);
        jz(l_end, T_NEAR);
        columns(true);

        L(l_end);
        if (key_.nt_stores)
            mov(reg_param_, ptr[rsp + param_off]);
        end_vector_code(reg_param_);
        add(rsp, frame_);
        pop_saved();
        ret();
    }
};

} // namespace

bool dst_transposed_supported(const kernel_key &k) {
    if (k.row_prefetch)
        return false;
    // The prefetch: the blocks', and the packed kernels' (which say
    // which).
    if (k.dt_cols || k.dt_rows)
        return dst_transposed_packed_supported(k);
    return ((k.isa == kernel_isa::avx512_core
             && (k.elem_size == 4 || k.elem_size == 2))
            || (k.isa == kernel_isa::avx2
                && (k.elem_size == 4 || k.elem_size == 2)))
           && !k.cond_scalar && !k.src0_scalar;
}

std::shared_ptr<const select_kernel>
create_jit_select_dt_kernel(const kernel_key &key) {
    if (key.dt_cols || key.dt_rows)
        return create_jit_select_dt_packed_kernel(key);
    if (key.isa == kernel_isa::avx2)
        return make_jit_kernel<jit_select_dt_avx2_t>(key);
    return make_jit_kernel<jit_select_dt_t>(key);
}

} // namespace impl
} // namespace selgraph
