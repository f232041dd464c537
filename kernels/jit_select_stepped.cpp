// Xbyak generator of the kernels whose src_0 lies with a step along the row
// (kernel_key::src0_step = k: element j of a row at src_0 + j * k * w, a
// slice x[..., ::k]), cond and src_1 constant along the row: per row, one
// cond byte takes src_0's row, gathered into dst's dense row, or fills dst's
// row with src_1's element. The plans run it to gather, call by call, the
// rows of an input with a step into a buffer that the row kernel reads
// (select_plan::gather), and to copy such an input where it is staged
// (src/dispatch.cpp).
//
// Gathering a row, one step of U dst elements at a time: dst lane i is
// source element i * k, so a step reads the k * U source elements from its
// first one, as k vectors of U lanes (lane (i * k) % U of vector
// (i * k) / U).
//   AVX-512: lanes of the element's own width (U = 64 / w: vpermt2w for
//            2-byte elements, vpermt2d, vpermt2q), but 1-byte elements
//            widened to dwords (vpmovzxbd, U = 16; vpermt2b would need
//            AVX512_VBMI). Source vectors go by pairs: lane i takes
//            element (i * k) % 2U of the pair's two tables, the same index
//            vector for every pair; the first pair's result is the step's,
//            each later one's is merged under the mask of the lanes it
//            holds.
//   AVX2:    32-bit units (U = 8; 64-bit ones, U = 4, for 8-byte
//            elements), 1- and 2-byte elements widened (vpmovzx{bd,wd})
//            and narrowed back on the store (vpshufb, then a cross-lane
//            permute); each source vector by vpermd (vpermq) and vpblendd
//            of the lanes it holds.
// Only where k <= U and k * w <= 64 bytes, so that every pair holds an
// element and every line read holds one: a larger step moves one element
// at a time, each its own cache line or two of them, which a scalar loop
// outruns memory at.
//
// No byte outside a row's elements is written, and none past its last
// element or before its first is read: a step reads the bytes between
// elements (the slice's gaps, inside the tensor), but steps run only while
// their last source vector ends at or before the row's last element. The
// rest of the row (at most U elements): AVX-512 the same step under masks
// (each source vector's loads masked to the row's span, the store to its
// elements), AVX2 element by element.
#include <xbyak/xbyak.h>

#include "jit_generator.hpp"
#include "jit_select.hpp"
#include "src/common.hpp"

namespace selgraph {
namespace impl {

namespace {

using namespace Xbyak;

template <kernel_isa isa, typename Vmm>
class jit_select_stepped_t : public jit_generator<select_kernel> {
public:
    explicit jit_select_stepped_t(const kernel_key &key)
        : jit_generator(key, 4096)
        , w_(key.elem_size)
        , scatter_(key.dst_step != 0)
        , k_(scatter_ ? key.dst_step : key.src0_step)
        , units_(units_of(key.elem_size)) {
        generate();
        ready();
    }

    /// Lanes per vector for elements of `w` bytes (the units a step moves).
    static int units_of(int w) {
        if (is_avx512)
            return w == 1 ? 16 : 64 / w;
        return w == 8 ? 4 : 8;
    }
    /// Whether a step of `k` elements of `w` bytes runs vectors.
    static bool vector_step(int k, int w) {
        return k >= 2 && k <= units_of(w) && k * w <= 64;
    }

private:
    static constexpr bool is_avx512 = isa == kernel_isa::avx512_core;
    static constexpr int vlen = is_avx512 ? 64 : 32;

    const Reg64 reg_param_ = rdi;
    const Reg64 reg_cond_ = r8;
    const Reg64 reg_src0_ = r9;
    const Reg64 reg_src1_ = r10;
    const Reg64 reg_dst_ = r11;
    const Reg64 reg_n_ = rcx;
    const Reg64 reg_rows_ = rdx;
    const Reg64 reg_i_ = rax;    // elements of the row done
    const Reg64 reg_tmp_ = rsi;  // scratch
    const Reg64 reg_lim_ = rbx;  // a loop limit or a span; saved
    const Reg64 reg_src_ = r12;  // the operand with the step, at the row's
                                 // next element (src_0's, or dst's); saved
    const Reg64 reg_ones_ = r13; // AVX-512: all ones; saved

    const Vmm vmm_out_ = Vmm(0);
    const Vmm vmm_t_ = Vmm(1);
    const Vmm vmm_t2_ = Vmm(6); // AVX-512: a pair's second table
    const Vmm vmm_fill_ = Vmm(2);
    const Vmm vmm_idx_ = Vmm(3);
    const Vmm vmm_narrow_ = Vmm(4); // AVX2: the in-lane shuffle of units
    const Vmm vmm_pack_ = Vmm(5);   // AVX2, 1-byte elements: the dwords
    const Opmask k_perm_ = k1;
    const Opmask k_load_ = k2;
    const Opmask k_store_ = k3;

    Label l_idx_, l_masks_, l_narrow_, l_pack_;

    // Bytes of one lane: the element's, or 4 where it is widened.
    int unit_bytes() const {
        if (is_avx512)
            return w_ == 1 ? 4 : w_;
        return w_ == 8 ? 8 : 4;
    }
    // Raw source bytes one vector of units reads.
    int src_vec_bytes() const { return units_ * w_; }
    // The dst lanes that source vectors [j, j + count) fill: bit i where
    // j <= (i * k) / U < j + count.
    uint32_t perm_mask(int j, int count = 1) const {
        uint32_t m = 0;
        for (int i = 0; i < units_; ++i)
            if (i * k_ / units_ >= j && i * k_ / units_ < j + count)
                m |= 1u << i;
        return m;
    }

    void load_vec(const Vmm &v, const Address &a) {
        if constexpr (is_avx512)
            vmovdqu32(v, a);
        else
            vmovdqu(v, a);
    }
    void store_vec(const Address &a, const Vmm &v) {
        if constexpr (is_avx512)
            vmovdqu32(a, v);
        else
            vmovdqu(a, v);
    }

    // --- one element of w_ bytes, by general-purpose registers -----------
    void move_elem(const RegExp &to, const RegExp &from) {
        switch (w_) {
            case 1:
                movzx(esi, byte[from]);
                mov(byte[to], sil);
                break;
            case 2:
                movzx(esi, word[from]);
                mov(word[to], si);
                break;
            case 4:
                mov(esi, dword[from]);
                mov(dword[to], esi);
                break;
            default:
                mov(rsi, qword[from]);
                mov(qword[to], rsi);
                break;
        }
    }

    // The row's elements from reg_i_ on, one at a time, reg_src_ at the
    // first of them.
    void elems_to_end() {
        Label l_loop, l_done;
        L(l_loop);
        cmp(reg_i_, reg_n_);
        jae(l_done, T_NEAR);
        move_elem(reg_dst_ + reg_i_ * w_, reg_src_);
        add(reg_src_, k_ * w_);
        inc(reg_i_);
        jmp(l_loop, T_NEAR);
        L(l_done);
    }

    // --- one step of units_ dst elements from reg_src_ --------------------
    // AVX-512 `masked`: the row's last m = n - reg_i_ elements (1 to
    // units_): each source vector loaded under the mask of the row's span
    // (k_load_), dst stored under the mask of m lanes (k_store_).
    // One vector of units_ elements at `a` (widened where unit_bytes()
    // says), under k_load_ where `masked`.
    void load_src(const Vmm &v, const RegExp &a, bool masked) {
        const Address m = ptr[a];
        if constexpr (is_avx512) {
            switch (w_) {
                case 1:
                    if (masked) {
                        vmovdqu8(Xmm(v.getIdx()) | k_load_ | T_z, m);
                        vpmovzxbd(v, Xmm(v.getIdx()));
                    } else {
                        vpmovzxbd(v, m);
                    }
                    break;
                case 2:
                    masked ? vmovdqu16(v | k_load_ | T_z, m) : vmovdqu16(v, m);
                    break;
                case 4:
                    masked ? vmovdqu32(v | k_load_ | T_z, m) : vmovdqu32(v, m);
                    break;
                default:
                    masked ? vmovdqu64(v | k_load_ | T_z, m) : vmovdqu64(v, m);
                    break;
            }
        } else {
            switch (w_) {
                case 1: vpmovzxbd(v, m); break;
                case 2: vpmovzxwd(v, m); break;
                default: vmovdqu(v, m); break;
            }
        }
    }

    // AVX-512: vmm_t_ = the lanes of the pair of tables vmm_t_ and `t2`.
    void permute_pair(const Operand &t2) {
        switch (unit_bytes()) {
            case 2: vpermt2w(vmm_t_, vmm_idx_, t2); break;
            case 4: vpermt2d(vmm_t_, vmm_idx_, t2); break;
            default: vpermt2q(vmm_t_, vmm_idx_, t2); break;
        }
    }
    // AVX-512: vmm_out_'s lanes of pair p, from vmm_t_: all of them for
    // the first pair, the pair's own under their mask for the others.
    void take_pair(int p) {
        if (p == 0) {
            vmovdqa64(vmm_out_, vmm_t_);
            return;
        }
        if (units_ > 16)
            kmovd(k_perm_, ptr[rip + l_masks_ + 4 * p]);
        else
            kmovw(k_perm_, ptr[rip + l_masks_ + 4 * p]);
        switch (unit_bytes()) {
            case 2: vmovdqu16(vmm_out_ | k_perm_, vmm_t_); break;
            case 4: vmovdqu32(vmm_out_ | k_perm_, vmm_t_); break;
            default: vmovdqu64(vmm_out_ | k_perm_, vmm_t_); break;
        }
    }

    // AVX2: vmm_out_'s lanes of source vector j (vmm_t_), the first one
    // setting the rest.
    void permute_in(int j) {
        const Vmm d = j == 0 ? vmm_out_ : vmm_t_;
        if (w_ == 8) {
            int imm = 0;
            for (int i = 0; i < units_; ++i)
                imm |= ((i * k_) % units_) << (2 * i);
            vpermq(d, vmm_t_, imm);
        } else {
            vpermd(d, vmm_idx_, vmm_t_);
        }
        if (j != 0) {
            // vpblendd: a bit per dword.
            const uint32_t m = perm_mask(j);
            int imm = 0;
            for (int i = 0; i < units_; ++i)
                if ((m >> i) & 1)
                    imm |= (w_ == 8 ? 3 : 1) << (i * (w_ == 8 ? 2 : 1));
            vpblendd(vmm_out_, vmm_out_, vmm_t_, imm);
        }
    }

    void store_out(const RegExp &a, bool masked) {
        const Address m = ptr[a];
        if constexpr (is_avx512) {
            switch (w_) {
                case 1:
                    masked ? vpmovdb(m | k_store_, vmm_out_)
                           : vpmovdb(m, vmm_out_);
                    break;
                case 2:
                    masked ? vmovdqu16(m | k_store_, vmm_out_)
                           : vmovdqu16(m, vmm_out_);
                    break;
                case 4:
                    masked ? vmovdqu32(m | k_store_, vmm_out_)
                           : vmovdqu32(m, vmm_out_);
                    break;
                default:
                    masked ? vmovdqu64(m | k_store_, vmm_out_)
                           : vmovdqu64(m, vmm_out_);
                    break;
            }
        } else {
            switch (w_) {
                case 1:
                    // The low byte of each dword to the low 4 bytes of its
                    // lane, then the two lanes' dwords together.
                    vpshufb(vmm_out_, vmm_out_, vmm_narrow_);
                    vpermd(vmm_out_, vmm_pack_, vmm_out_);
                    vmovq(m, Xmm(vmm_out_.getIdx()));
                    break;
                case 2:
                    vpshufb(vmm_out_, vmm_out_, vmm_narrow_);
                    vpermq(vmm_out_, vmm_out_, 0x08);
                    vmovdqu(m, Xmm(vmm_out_.getIdx()));
                    break;
                default: vmovdqu(m, vmm_out_); break;
            }
        }
    }

    // AVX-512, `masked`: k_load_ for source vector j, counting down the
    // span in reg_lim_ from vector `at`; jumps to `none` where the span
    // ends before vector j (neither it nor any later one holds an element
    // of the step).
    void span_mask(int j, int &at, Label &none) {
        if (j > at) {
            sub(reg_lim_, (j - at) * units_);
            jle(none, T_NEAR);
            at = j;
        }
        // At most a vector's lanes (bzhi reads the low byte of its index,
        // and the span reaches 31 * 32 + 1 elements).
        mov(reg_tmp_, units_);
        cmp(reg_lim_, reg_tmp_);
        cmovl(reg_tmp_, reg_lim_);
        bzhi(reg_tmp_.cvt32(), reg_ones_.cvt32(), reg_tmp_.cvt32());
        kmovd(k_load_, reg_tmp_.cvt32());
    }

    // AVX-512, the row's last m = n - reg_i_ elements: `dense` gets the
    // mask of their m lanes (of the dense side), reg_lim_ their span on the
    // side with the step, (m - 1) * k + 1 elements from reg_src_.
    void tail_span(const Opmask &dense) {
        mov(reg_tmp_, reg_n_);
        sub(reg_tmp_, reg_i_);
        bzhi(reg_lim_.cvt32(), reg_ones_.cvt32(), reg_tmp_.cvt32());
        kmovd(dense, reg_lim_.cvt32());
        lea(reg_lim_, ptr[reg_tmp_ - 1]);
        imul(reg_lim_, reg_lim_, k_);
        inc(reg_lim_);
    }

    void step(bool masked) {
        Label l_loaded;
        if (masked)
            tail_span(k_store_);
        int at = 0; // the source vector reg_lim_ counts from
        if constexpr (is_avx512) {
            for (int p = 0; 2 * p < k_; ++p) {
                const int j = 2 * p;
                const bool second = j + 1 < k_;
                if (masked)
                    span_mask(j, at, l_loaded);
                load_src(vmm_t_, reg_src_ + j * src_vec_bytes(), masked);
                // A pair's second table: from memory where it is whole
                // lanes, else into a register (a single table: itself).
                if (!second) {
                    permute_pair(vmm_t_);
                } else if (!masked && w_ != 1) {
                    permute_pair(ptr[reg_src_ + (j + 1) * src_vec_bytes()]);
                } else {
                    if (masked) {
                        // No element in the second table (nor later): the
                        // first alone, and the step is complete.
                        Label l_two;
                        mov(reg_tmp_, reg_lim_);
                        sub(reg_tmp_, units_);
                        jg(l_two, T_NEAR);
                        permute_pair(vmm_t_);
                        take_pair(p);
                        jmp(l_loaded, T_NEAR);
                        L(l_two);
                        span_mask(j + 1, at, l_loaded);
                    }
                    load_src(vmm_t2_, reg_src_ + (j + 1) * src_vec_bytes(),
                             masked);
                    permute_pair(vmm_t2_);
                }
                take_pair(p);
            }
        } else {
            for (int j = 0; j < k_; ++j) {
                load_src(vmm_t_, reg_src_ + j * src_vec_bytes(), false);
                permute_in(j);
            }
        }
        L(l_loaded);
        store_out(reg_dst_ + reg_i_ * w_, masked);
    }

    void gather_row() {
        xor_(reg_i_, reg_i_);
        mov(reg_src_, reg_src0_);
        if (!vector_step(k_, w_)) {
            elems_to_end();
            return;
        }
        // Steps while the next one's k source vectors end at or before the
        // row's last element: reg_i_ + U <= n - 1.
        Label l_step, l_rest;
        mov(reg_lim_, reg_n_);
        sub(reg_lim_, units_ + 1);
        L(l_step);
        cmp(reg_i_, reg_lim_);
        jg(l_rest, T_NEAR);
        step(false);
        add(reg_i_, units_);
        add(reg_src_, units_ * k_ * w_);
        jmp(l_step, T_NEAR);
        L(l_rest);
        if constexpr (is_avx512)
            step(true); // 1 to U elements are left
        else
            elems_to_end();
    }

    // dst's row filled with src_1's element.
    void fill_row() {
        const int lanes = vlen / w_;
        switch (w_) {
            case 1: vpbroadcastb(vmm_fill_, ptr[reg_src1_]); break;
            case 2: vpbroadcastw(vmm_fill_, ptr[reg_src1_]); break;
            case 4: vpbroadcastd(vmm_fill_, ptr[reg_src1_]); break;
            default: vpbroadcastq(vmm_fill_, ptr[reg_src1_]); break;
        }
        xor_(reg_i_, reg_i_);
        Label l_vec, l_rest, l_done;
        mov(reg_lim_, reg_n_);
        sub(reg_lim_, lanes);
        L(l_vec);
        cmp(reg_i_, reg_lim_);
        jg(l_rest, T_NEAR);
        store_vec(ptr[reg_dst_ + reg_i_ * w_], vmm_fill_);
        add(reg_i_, lanes);
        jmp(l_vec, T_NEAR);
        L(l_rest);
        if constexpr (is_avx512) {
            // 0 to lanes - 1 elements: under a mask of as many lanes.
            mov(reg_tmp_, reg_n_);
            sub(reg_tmp_, reg_i_);
            jz(l_done, T_NEAR);
            mov(reg_lim_, -1);
            bzhi(reg_lim_, reg_lim_, reg_tmp_);
            kmovq(k_store_, reg_lim_);
            const Address a = ptr[reg_dst_ + reg_i_ * w_];
            switch (w_) {
                case 1: vmovdqu8(a | k_store_, vmm_fill_); break;
                case 2: vmovdqu16(a | k_store_, vmm_fill_); break;
                case 4: vmovdqu32(a | k_store_, vmm_fill_); break;
                default: vmovdqu64(a | k_store_, vmm_fill_); break;
            }
        } else {
            mov(reg_src_, reg_src1_);
            Label l_loop;
            L(l_loop);
            cmp(reg_i_, reg_n_);
            jae(l_done, T_NEAR);
            move_elem(reg_dst_ + reg_i_ * w_, reg_src_);
            inc(reg_i_);
            jmp(l_loop, T_NEAR);
        }
        L(l_done);
    }

    // --- kernel_key::dst_step: a dense src_0 row into dst's elements -----
    // The row's elements from reg_i_ on, one at a time, reg_src_ at dst's
    // next element; from src_1's one element where `fill`.
    void scatter_elems(bool fill) {
        Label l_loop, l_done;
        L(l_loop);
        cmp(reg_i_, reg_n_);
        jae(l_done, T_NEAR);
        move_elem(reg_src_,
                  fill ? RegExp(reg_src1_) : RegExp(reg_src0_ + reg_i_ * w_));
        add(reg_src_, k_ * w_);
        inc(reg_i_);
        jmp(l_loop, T_NEAR);
        L(l_done);
    }

    // AVX-512: one step of units_ src_0 elements (the last m = n - reg_i_,
    // 1 to units_, where `masked`) into k dst vectors from reg_src_: dst
    // vector j takes, at lane l where (j * U + l) % k == 0, element
    // (j * U + l) / k, by a permute of its own indices, and is stored under
    // the mask of those lanes (and of the row's span).
    void scatter_step(bool masked) {
        Label l_done;
        if (masked)
            tail_span(k_load_);
        // The dense source: the m lanes of the tail under k_load_.
        load_src(vmm_t2_, reg_src0_ + reg_i_ * w_, masked);
        for (int j = 0; j < k_; ++j) {
            if (units_ > 16)
                kmovd(k_perm_, ptr[rip + l_masks_ + 4 * j]);
            else
                kmovw(k_perm_, ptr[rip + l_masks_ + 4 * j]);
            if (masked) {
                // Lanes of vector j within the span: none, and the step
                // is done.
                if (j > 0) {
                    sub(reg_lim_, units_);
                    jle(l_done, T_NEAR);
                }
                mov(reg_tmp_, units_);
                cmp(reg_lim_, reg_tmp_);
                cmovl(reg_tmp_, reg_lim_);
                bzhi(reg_tmp_.cvt32(), reg_ones_.cvt32(), reg_tmp_.cvt32());
                kmovd(k_store_, reg_tmp_.cvt32());
                kandd(k_perm_, k_perm_, k_store_);
            }
            vmovdqu32(vmm_idx_, ptr[rip + l_idx_ + j * vlen]);
            const RegExp to = reg_src_ + j * units_ * w_;
            switch (w_) {
                case 1:
                    vpermd(vmm_t_, vmm_idx_, vmm_t2_);
                    vpmovdb(ptr[to] | k_perm_, vmm_t_);
                    break;
                case 2:
                    vpermw(vmm_t_, vmm_idx_, vmm_t2_);
                    vmovdqu16(ptr[to] | k_perm_, vmm_t_);
                    break;
                case 4:
                    vpermd(vmm_t_, vmm_idx_, vmm_t2_);
                    vmovdqu32(ptr[to] | k_perm_, vmm_t_);
                    break;
                default:
                    vpermq(vmm_t_, vmm_idx_, vmm_t2_);
                    vmovdqu64(ptr[to] | k_perm_, vmm_t_);
                    break;
            }
        }
        L(l_done);
    }

    void scatter_row() {
        xor_(reg_i_, reg_i_);
        mov(reg_src_, reg_dst_);
        if (!is_avx512 || !vector_step(k_, w_)) {
            scatter_elems(false);
            return;
        }
        // Whole steps (their stores masked to dst's elements), then the
        // rest under the span's mask.
        Label l_step, l_rest, l_done;
        mov(reg_lim_, reg_n_);
        sub(reg_lim_, units_);
        L(l_step);
        cmp(reg_i_, reg_lim_);
        jg(l_rest, T_NEAR);
        scatter_step(false);
        add(reg_i_, units_);
        add(reg_src_, units_ * k_ * w_);
        jmp(l_step, T_NEAR);
        L(l_rest);
        cmp(reg_i_, reg_n_);
        jae(l_done, T_NEAR);
        scatter_step(true);
        L(l_done);
    }

    void generate() {
        push_saved({ rbx, r12, r13 });
        mov(reg_ones_, -1);
        mov(reg_cond_, ptr[reg_param_ + offsetof(select_call_args, cond)]);
        mov(reg_src0_, ptr[reg_param_ + offsetof(select_call_args, src0)]);
        mov(reg_src1_, ptr[reg_param_ + offsetof(select_call_args, src1)]);
        mov(reg_dst_, ptr[reg_param_ + offsetof(select_call_args, dst)]);
        mov(reg_n_, ptr[reg_param_ + offsetof(select_call_args, n)]);
        mov(reg_rows_, ptr[reg_param_ + offsetof(select_call_args, rows)]);
        const bool vec = vector_step(k_, w_);
        if (vec && !scatter_ && !(!is_avx512 && w_ == 8))
            load_vec(vmm_idx_, ptr[rip + l_idx_]);
        if (vec && !scatter_ && !is_avx512 && w_ <= 2)
            load_vec(vmm_narrow_, ptr[rip + l_narrow_]);
        if (vec && !scatter_ && !is_avx512 && w_ == 1)
            load_vec(vmm_pack_, ptr[rip + l_pack_]);

        Label l_row, l_fill, l_next;
        L(l_row);
        cmp(byte[reg_cond_], 0);
        if (key_.invert_cond)
            jne(l_fill, T_NEAR);
        else
            je(l_fill, T_NEAR);
        if (scatter_)
            scatter_row();
        else
            gather_row();
        jmp(l_next, T_NEAR);
        L(l_fill);
        if (scatter_) {
            xor_(reg_i_, reg_i_);
            mov(reg_src_, reg_dst_);
            scatter_elems(true);
        } else {
            fill_row();
        }
        L(l_next);
        add(reg_cond_,
            ptr[reg_param_ + offsetof(select_call_args, cond_stride)]);
        add(reg_src0_,
            ptr[reg_param_ + offsetof(select_call_args, src0_stride)]);
        add(reg_src1_,
            ptr[reg_param_ + offsetof(select_call_args, src1_stride)]);
        add(reg_dst_, ptr[reg_param_ + offsetof(select_call_args, dst_stride)]);
        dec(reg_rows_);
        jnz(l_row, T_NEAR);

        end_vector_code(reg_param_);
        pop_saved();
        ret();

        // Constants.
        align(64);
        if (scatter_) {
            if (is_avx512 && vec)
                scatter_constants();
            return;
        }
        L(l_idx_);
        // AVX-512: lane i takes element (i * k) % 2U of its pair's tables;
        // AVX2: (i * k) % U of its vector.
        const int tables = is_avx512 ? 2 : 1;
        for (int i = 0; i < units_; ++i) {
            const int e = (i * k_) % (tables * units_);
            switch (unit_bytes()) {
                case 2: dw(static_cast<uint32_t>(e)); break;
                case 4: dd(static_cast<uint32_t>(e)); break;
                default: dq(static_cast<uint64_t>(e)); break;
            }
        }
        // AVX-512: the lanes of each pair.
        L(l_masks_);
        for (int p = 0; 2 * p < k_ && p < 32; ++p)
            dd(perm_mask(2 * p, 2));
        align(32);
        L(l_narrow_);
        // Per 16-byte lane: the low w_ bytes of each dword first, the rest
        // zeroed (0x80).
        for (int lane = 0; lane < 2; ++lane)
            for (int b = 0; b < 16; ++b) {
                const int d = b / w_, o = b % w_;
                db(w_ <= 2 && d < 4 ? 4 * d + o : 0x80);
            }
        L(l_pack_);
        // The two lanes' first dwords (1-byte elements: 4 each).
        for (int i = 0; i < 8; ++i)
            dd(i == 0 ? 0 : i == 1 ? 4 : 0);
    }

    // kernel_key::dst_step: per dst vector j of a step, the index of the
    // source element of each lane (a vector's width), then the lanes'
    // mask.
    void scatter_constants() {
        L(l_idx_);
        for (int j = 0; j < k_; ++j)
            for (int l = 0; l < units_; ++l) {
                const int e = j * units_ + l;
                const int src = e % k_ == 0 ? e / k_ : 0;
                switch (unit_bytes()) {
                    case 2: dw(static_cast<uint32_t>(src)); break;
                    case 4: dd(static_cast<uint32_t>(src)); break;
                    default: dq(static_cast<uint64_t>(src)); break;
                }
            }
        L(l_masks_);
        for (int j = 0; j < k_; ++j) {
            uint32_t m = 0;
            for (int l = 0; l < units_; ++l)
                if ((j * units_ + l) % k_ == 0)
                    m |= 1u << l;
            dd(m);
        }
    }

    const int w_;
    const bool scatter_; // kernel_key::dst_step: dst has the step
    const int k_;
    const int units_;
};

} // namespace

bool stepped_supported(const kernel_key &k) {
    return (k.isa == kernel_isa::avx512_core || k.isa == kernel_isa::avx2)
           && (k.elem_size == 1 || k.elem_size == 2 || k.elem_size == 4
               || k.elem_size == 8)
           && (k.src0_step >= 2) != (k.dst_step >= 2) && k.src0_step != 1
           && k.dst_step != 1 && k.cond_scalar && !k.src0_scalar
           && k.src1_scalar && !k.nt_stores && !k.dst_transposed && !k.dt_cols
           && !k.dt_rows && !k.dt_prefetch && !k.row_prefetch && !k.row_pitch
           && !k.row_len && k.unroll == 1;
}

std::shared_ptr<const select_kernel>
create_jit_select_stepped_kernel(const kernel_key &key) {
    if (key.isa == kernel_isa::avx512_core)
        return make_jit_kernel<
                jit_select_stepped_t<kernel_isa::avx512_core, Xbyak::Zmm>>(key);
    return make_jit_kernel<jit_select_stepped_t<kernel_isa::avx2, Xbyak::Ymm>>(
            key);
}

} // namespace impl
} // namespace selgraph
