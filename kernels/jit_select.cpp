// Xbyak generator of the Select kernels, one template for AVX-512 (zmm,
// opmasks) and AVX2 (ymm), specialised by kernel_key: element width, which
// operands are scalar along the row, cond inversion, unroll and
// non-temporal stores.
//
// Per element: dst = cond ? src_0 : src_1, moved as raw bits (an integer
// blend of 1-, 2-, 4- or 8-byte lanes: no type needs a conversion, and NaN
// payloads and -0.0 survive).
//
// Cond bytes become a lane mask directly:
//   AVX-512: vptestmb k, c, c on E cond bytes (E = lanes per vector; 8
//            bytes, loaded with vmovq, for 8-byte lanes), then
//            vpblendm{b,w,d,q} dst{k}, src_1, src_0.
//   AVX2:    widen E cond bytes to lanes (vpmovzxb{w,d,q}), compare with
//            zero (lanes of all ones where cond is false), vpblendvb.
// Tails: AVX-512 uses an opmask for the cond bytes, the loads and the
// store, so no byte outside a tensor is touched. AVX2 has no byte-granular
// masks: it ends a row of at least one vector with one more whole vector
// that ends where the row does, overlapping the vector before. The
// elements stored twice get the same bits both times, in place too, as
// select(c, select(c, a, b), b) == select(c, a, b) with dst on src_0 (or
// on src_1, after the swap that keeps a scalar source in src_1). A row
// shorter than a vector goes the same way in two overlapping parts of
// 16, 8 or 4 bytes (xmm moves that read and write only the row's bytes),
// the widest of which two cover it; the rest (rows under 4 bytes, and the
// elements after a row's last whole vector where the tiles ask for it:
// elem_tail) one element at a time with scalar moves and cmov (32-bit
// registers for 1- to 4-byte elements, 64-bit ones for 8-byte elements).
//
// Non-temporal stores: AVX-512 streams a row from its first aligned vector
// (a line), after a masked head stored within its own line (the top lanes
// of the aligned vector before). AVX2 streams whole lines only, two
// vectors each, and stores the elements before a row's first streamed
// line and after its last with regular stores that stay off the streamed
// lines (row_loop_nt_lines).
//
// Row prefetch (key.row_prefetch, non-temporal kernels only): for rows that
// lie apart, whose lines the hardware prefetchers followed poorly from DRAM
// behind non-temporal stores, each vector also prefetches (prefetcht0) the
// line of each vector input pf_rows rows on, once per 64 bytes of the input
// where the vectors step through whole lines; r13-r15 hold the inputs'
// pointers pf_rows rows on, and follow the rows themselves in a call's last
// pf_rows rows, so that no prefetch reaches past the call's last row.
//
// Cond constant along the row (per-row or 0-D cond): the row is a copy from
// (or a fill with) the chosen source, decided once per row.
#include "jit_select.hpp"

#include <numeric>

#include <xbyak/xbyak.h>

#include "jit_generator.hpp"
#include "src/common.hpp"
#include "src/cpu_isa.hpp"

namespace selgraph {
namespace impl {

const char *kernel_isa2str(kernel_isa isa) {
    switch (isa) {
        case kernel_isa::avx512_core: return "avx512_core";
        case kernel_isa::avx2: return "avx2";
        default: return "ref";
    }
}

std::string kernel_name(const kernel_key &k) {
    std::string s = kernel_isa2str(k.isa);
    s += "_e" + std::to_string(k.elem_size);
    s += k.cond_scalar ? "_cs" : "_cv";
    if (k.invert_cond)
        s += "n";
    s += k.src0_scalar ? "_as"
         : k.src0_step ? "_ax" + std::to_string(k.src0_step)
                       : "_av";
    s += k.src1_scalar ? "_bs" : "_bv";
    if (k.dst_transposed)
        s += "_dt"
             + (k.dt_rows   ? "i" + std::to_string(k.dt_rows)
                : k.dt_cols ? std::to_string(k.dt_cols)
                            : std::string())
             + (k.dt_prefetch ? "_pf" : "");
    else
        s += "_u" + std::to_string(k.unroll) + (k.row_prefetch ? "_pf" : "")
             + (k.row_pitch ? "_g" + std::to_string(k.row_pitch) : "")
             + (k.row_len ? "_n" + std::to_string(k.row_len) : "")
             + (k.dst_step ? "_dx" + std::to_string(k.dst_step) : "");
    if (k.nt_stores)
        s += "_nt";
    return s;
}

namespace {

using namespace Xbyak;

template <kernel_isa isa, typename Vmm>
class jit_select_t : public jit_generator<select_kernel> {
public:
    explicit jit_select_t(const kernel_key &key)
        : jit_generator(key, 4096)
        , w_(key.elem_size)
        , lw_(ilog2(key.elem_size))
        , lanes_(vlen / key.elem_size)
        , unroll_(key.unroll) {
        generate();
        ready();
    }

private:
    static constexpr bool is_avx512 = isa == kernel_isa::avx512_core;
    static constexpr int vlen = is_avx512 ? 64 : 32;

    // Register budget (System V): the argument pointer, four row pointers,
    // the row length and count, the element index and three scratch
    // registers (rbx and r12 are saved in the preamble).
    const Reg64 reg_param_ = rdi;
    const Reg64 reg_cond_ = r8;
    const Reg64 reg_src0_ = r9;
    const Reg64 reg_src1_ = r10;
    const Reg64 reg_dst_ = r11;
    const Reg64 reg_n_ = rcx;
    const Reg64 reg_rows_ = rdx;
    const Reg64 reg_i_ = rax;
    const Reg64 reg_tmp_ = rsi;
    const Reg64 reg_tmp2_ = rbx;
    const Reg64 reg_lim_ = r12;
    // kernel_key::row_prefetch: each vector input's pointer pf_rows rows
    // on (r13-r15 are saved in the preamble).
    const Reg64 reg_pf_cond_ = r13;
    const Reg64 reg_pf_src0_ = r14;
    const Reg64 reg_pf_src1_ = r15;
    // Short rows (kernel_key::row_len without row_pitch): the row strides,
    // in the registers of the prefetch pointers and of n (a constant).
    const Reg64 reg_st_cond_ = r13;
    const Reg64 reg_st_src0_ = r14;
    const Reg64 reg_st_src1_ = r15;
    const Reg64 reg_st_dst_ = rcx;
    bool short_rows() const { return key_.row_len && !key_.row_pitch; }
    // kernel_key::row_pitch not dividing the lanes (AVX-512): the row
    // lanes of a vector rotate with its index in the stream, over
    // pitch / gcd(pitch, lanes_) vectors; each vector's mask comes from a
    // table after the code (reg_masks_), at reg_mask_at_ bytes for the
    // first vector of an unrolled step.
    bool rotating_rows() const {
        return key_.row_pitch && lanes_ % key_.row_pitch != 0;
    }
    int rows_period() const {
        return key_.row_pitch / std::gcd(int { key_.row_pitch }, lanes_);
    }
    const Reg64 reg_mask_at_ = r13;
    const Reg64 reg_masks_ = r14;
    Label l_rows_masks_;
    bool saves_r13_r15() const {
        return key_.row_prefetch || short_rows() || rotating_rows();
    }

    // Vector registers: per unroll slot u a cond register, two source
    // registers and (AVX-512) a result register; then the broadcast scalars.
    int vidx_cond(int u) const { return u; }
    int vidx_a(int u) const { return 4 + u; }
    int vidx_b(int u) const { return 8 + u; }
    int vidx_d(int u) const { return is_avx512 ? 12 + u : vidx_cond(u); }
    const Vmm vmm_zero_ = Vmm(12); // AVX2 only
    const Vmm vmm_scalar_a_ = Vmm(is_avx512 ? 28 : 13);
    const Vmm vmm_scalar_b_ = Vmm(is_avx512 ? 29 : 14);
    const Opmask k_tail_ = k7;
    // kernel_key::row_pitch: the lanes of a vector that hold row elements,
    // and those of the tail (k_tail_ & k_rows_).
    const Opmask k_rows_ = k6;
    const Opmask k_tail_rows_ = k5;
    // AVX2: each vector stored in its rows' pieces (store_row_pieces).
    bool gap_stores_ = false;
    // AVX-512, non-temporal rows: the vector being emitted is a row's head,
    // whose lanes before the row are masked off (row_loop).
    bool head_ = false;

    // The register holding `lanes_` cond bytes (AVX-512).
    Xmm cond_bytes(int u) const {
        switch (lanes_) {
            case 8:
            case 16: return Xmm(vidx_cond(u));
            case 32: return Ymm(vidx_cond(u));
            default: return Zmm(vidx_cond(u));
        }
    }

    RegExp cond_addr(int off) const { return reg_cond_ + reg_i_ + off; }
    RegExp elem_addr(const Reg64 &base, bool scalar, int off) const {
        if (scalar)
            return RegExp(base);
        return base + reg_i_ * w_ + off * w_;
    }

    // --- AVX-512 moves of w_-byte lanes, optionally masked ---------------
    void load_lanes(const Vmm &v, const RegExp &addr, bool masked) {
        const Address a = ptr[addr];
        switch (w_) {
            case 1:
                masked ? vmovdqu8(v | k_tail_ | T_z, a) : vmovdqu8(v, a);
                break;
            case 2:
                masked ? vmovdqu16(v | k_tail_ | T_z, a) : vmovdqu16(v, a);
                break;
            case 4:
                masked ? vmovdqu32(v | k_tail_ | T_z, a) : vmovdqu32(v, a);
                break;
            default:
                masked ? vmovdqu64(v | k_tail_ | T_z, a) : vmovdqu64(v, a);
                break;
        }
    }
    void store_lanes(const RegExp &addr, const Vmm &v, bool masked) {
        const Address a = ptr[addr];
        if (masked || key_.row_pitch) {
            // Row gaps: every store under the mask of the row lanes.
            const Opmask k = !key_.row_pitch ? k_tail_
                             : masked        ? k_tail_rows_
                                             : k_rows_;
            switch (w_) {
                case 1: vmovdqu8(a | k, v); break;
                case 2: vmovdqu16(a | k, v); break;
                case 4: vmovdqu32(a | k, v); break;
                default: vmovdqu64(a | k, v); break;
            }
        } else if (key_.nt_stores) {
            vmovntdq(a, v);
        } else {
            vmovdqu32(a, v);
        }
    }
    void broadcast_lanes(const Vmm &v, const Reg64 &base) {
        switch (w_) {
            case 1: vpbroadcastb(v, ptr[base]); break;
            case 2: vpbroadcastw(v, ptr[base]); break;
            case 4: vpbroadcastd(v, ptr[base]); break;
            default: vpbroadcastq(v, ptr[base]); break;
        }
    }

    // kernel_key::row_prefetch: the line pf_rows rows on of the vector at
    // element reg_i_ + off of input `base` (`pf` its prefetch pointer),
    // once per 64 bytes of the input.
    void prefetch_ahead(const Reg64 &pf, int elem_bytes, int off) {
        if (key_.row_prefetch && !head_ && (off * elem_bytes) % 64 == 0)
            prefetcht0(ptr[pf + reg_i_ * elem_bytes + off * elem_bytes]);
    }

    // --- one vector of a row where cond is a vector -----------------------
    void select_vector(int u, int off, bool masked) {
        const Vmm va = key_.src0_scalar ? vmm_scalar_a_ : Vmm(vidx_a(u));
        const Vmm vb = key_.src1_scalar ? vmm_scalar_b_ : Vmm(vidx_b(u));
        if (!key_.src0_scalar)
            prefetch_ahead(reg_pf_src0_, w_, off);
        if (!key_.src1_scalar)
            prefetch_ahead(reg_pf_src1_, w_, off);
        prefetch_ahead(reg_pf_cond_, 1, off);
        if (!key_.src0_scalar)
            load_or_plain(va, elem_addr(reg_src0_, false, off), masked);
        if (!key_.src1_scalar)
            load_or_plain(vb, elem_addr(reg_src1_, false, off), masked);
        const Vmm vd = Vmm(vidx_d(u));
        if constexpr (is_avx512) {
            const Xmm c = cond_bytes(u);
            const Opmask kc = Opmask(1 + u);
            if (masked)
                vmovdqu8(c | k_tail_ | T_z, ptr[cond_addr(off)]);
            else if (lanes_ == 8)
                vmovq(c, qword[cond_addr(off)]); // 8 bytes, no further
            else
                vmovdqu8(c, ptr[cond_addr(off)]);
            blend_by_cond_mask(vd, va, vb, c, kc);
        } else {
            const Vmm c = Vmm(vidx_cond(u));
            const Address a = ptr[cond_addr(off)];
            cond_zero_lanes(c, &a);
            blend_by_cond(vd, va, vb, c);
        }
        if (rotating_rows() && !masked)
            kmovq(k_rows_, ptr[reg_masks_ + reg_mask_at_ + off / lanes_ * 8]);
        store_or_plain(elem_addr(reg_dst_, false, off), vd, masked, u);
    }

    // AVX-512: vd = va where c's cond bytes (one per lane) are set, else vb
    // (k: their mask); swapped with invert_cond.
    void blend_by_cond_mask(const Xmm &vd, const Xmm &va, const Xmm &vb,
                            const Xmm &c, const Opmask &k) {
        if (key_.invert_cond)
            vptestnmb(k, c, c);
        else
            vptestmb(k, c, c);
        switch (w_) {
            case 1: vpblendmb(vd | k, vb, va); break;
            case 2: vpblendmw(vd | k, vb, va); break;
            case 4: vpblendmd(vd | k, vb, va); break;
            default: vpblendmq(vd | k, vb, va); break;
        }
    }

    // AVX2: c = lanes of all ones where the cond bytes are zero, the bytes
    // read from `mem` (one per lane), or, with no `mem`, already in c's
    // low bytes.
    template <typename V>
    void cond_zero_lanes(const V &c, const Address *mem) {
        const V zero(vmm_zero_.getIdx());
        const Operand &src = mem ? static_cast<const Operand &>(*mem) : c;
        switch (w_) {
            case 1:
                if (mem)
                    vmovdqu(c, *mem);
                vpcmpeqb(c, c, zero);
                break;
            case 2:
                vpmovzxbw(c, src);
                vpcmpeqw(c, c, zero);
                break;
            case 4:
                vpmovzxbd(c, src);
                vpcmpeqd(c, c, zero);
                break;
            default:
                vpmovzxbq(c, src);
                vpcmpeqq(c, c, zero);
                break;
        }
    }
    // AVX2: vd = va where cond is set, else vb (c from cond_zero_lanes:
    // src_1 where its lanes are all ones); swapped with invert_cond.
    template <typename V>
    void blend_by_cond(const V &vd, const V &va, const V &vb, const V &c) {
        if (key_.invert_cond)
            vpblendvb(vd, vb, va, c);
        else
            vpblendvb(vd, va, vb, c);
    }

    // --- one vector of a row copied (or filled) from one source ----------
    void copy_vector(const Reg64 &src, bool scalar, const Vmm &vs, int u,
                     int off, bool masked) {
        Vmm v = vs;
        if (!scalar) {
            prefetch_ahead(src == reg_src0_ ? reg_pf_src0_ : reg_pf_src1_, w_,
                           off);
            v = Vmm(vidx_a(u));
            load_or_plain(v, elem_addr(src, false, off), masked);
        }
        store_or_plain(elem_addr(reg_dst_, false, off), v, masked, u);
    }

    void load_or_plain(const Vmm &v, const RegExp &addr, bool masked) {
        if constexpr (is_avx512)
            load_lanes(v, addr, masked);
        else
            vmovdqu(v, ptr[addr]);
    }
    // AVX2's `masked`: a vector of a non-temporal row's partial lines
    // (row_loop_nt_lines), stored with a regular store. u: the unroll
    // slot, whose src_0 register AVX2's row pieces may take.
    void store_or_plain(const RegExp &addr, const Vmm &v, bool masked, int u) {
        if constexpr (is_avx512)
            store_lanes(addr, v, masked);
        else if (gap_stores_)
            store_row_pieces(addr, v, Xmm(vidx_a(u)));
        else if (key_.nt_stores && !masked)
            vmovntdq(ptr[addr], v);
        else
            vmovdqu(ptr[addr], v);
    }

    // AVX2, kernel_key::row_pitch: each row of the vector at `addr` in the
    // pieces of 16, 8, 4, 2 and 1 bytes that make its row_len elements,
    // widest first. A row starts a multiple of the pitch's bytes (a power
    // of two above every piece) into the vector, so each piece lies
    // aligned to its size within one 16-byte lane: a plain store of the
    // low lane, or an extract from it or from the high lane (copied to
    // `hi` once per vector). AVX2 has no masked store of bytes or words,
    // and its vpmaskmov{d,q} stores are microcoded on AMD's AVX2-only
    // cores (Zen 2 and 3: 42 uops, one per 12 cycles, as uops.info
    // measured them); on Zen 5, under the AVX2 cap, pieces and vpmaskmov
    // ran 3 f32 of 4 and 3 f64 of 4 at the same speed.
    void store_row_pieces(const RegExp &addr, const Vmm &v, const Xmm &hi) {
        if (w_ <= 2 && key_.row_pitch * w_ <= 8) {
            store_row_pieces_gpr(addr, v, hi);
            return;
        }
        const Xmm lo(v.getIdx());
        bool hi_ready = false;
        each_row_piece(vlen, [&](int b, int s) {
            const RegExp a = addr + b;
            const bool high = b >= 16;
            const int bi = b % 16;
            if (s == 16) {
                if (high)
                    vextracti128(xword[a], Ymm(v.getIdx()), 1);
                else
                    vmovdqu(xword[a], lo);
                return;
            }
            if (high && !hi_ready) {
                vextracti128(hi, Ymm(v.getIdx()), 1);
                hi_ready = true;
            }
            const Xmm x = high ? hi : lo;
            switch (s) {
                case 8:
                    if (bi)
                        vpextrq(qword[a], x, 1);
                    else
                        vmovq(qword[a], x);
                    break;
                case 4:
                    if (bi)
                        vpextrd(dword[a], x, static_cast<uint8_t>(bi / 4));
                    else
                        vmovd(dword[a], x);
                    break;
                case 2:
                    vpextrw(word[a], x, static_cast<uint8_t>(bi / 2));
                    break;
                default: vpextrb(byte[a], x, static_cast<uint8_t>(bi)); break;
            }
        });
    }

    // The pieces of the rows in the first `span` bytes of a row_pitch
    // stream's vector: piece(b, s) for each, s bytes at byte b (16, 8, 4,
    // 2 or 1, the widest of each row first), in address order.
    template <typename Piece>
    void each_row_piece(int span, const Piece &piece) const {
        const int row_bytes = key_.row_len * w_;
        for (int base = 0; base < span; base += key_.row_pitch * w_) {
            int off = 0;
            for (int s = 16; s >= 1; s /= 2)
                if (row_bytes & s) {
                    piece(base + off, s);
                    off += s;
                }
        }
    }

    // store_row_pieces where a row and its gap fit in 8 bytes (1- and
    // 2-byte elements, pitches of 2 to 8 bytes, powers of two): each
    // quadword of the vector moved once into reg_tmp2_ (vmovq, vpextrq),
    // then its rows' pieces (4, 2 and 1 bytes, widest first) stored from
    // there, shifted down to each piece in turn. A piece is then one store
    // where an extract to memory is a store and a shuffle, and the shuffle
    // port no longer bounds a vector of up to 16 rows (docs/performance.md,
    // "Padded pixels of bytes on AVX2").
    void store_row_pieces_gpr(const RegExp &addr, const Vmm &v, const Xmm &hi) {
        const Reg64 r = reg_tmp2_;
        const Xmm lo(v.getIdx());
        vextracti128(hi, Ymm(v.getIdx()), 1);
        for (int q = 0; q < vlen / 8; ++q) {
            const Xmm x = q < 2 ? lo : hi;
            if (q % 2)
                vpextrq(r, x, 1);
            else
                vmovq(r, x);
            int at = 0; // the quadword's byte now in r's low bits
            each_row_piece(8, [&](int b, int s) {
                if (b != at) {
                    shr(r, 8 * (b - at));
                    at = b;
                }
                const Address a = ptr[addr + (8 * q + b)];
                switch (s) {
                    case 4: mov(a, r.cvt32()); break;
                    case 2: mov(a, r.cvt16()); break;
                    default: mov(a, r.cvt8()); break;
                }
            });
        }
    }

    // --- one element at reg_i_, with scalar moves (AVX2, and short rows)
    // Loads w_ bytes of `base` (at reg_i_ + off unless scalar) into `r`.
    void load_elem(const Reg64 &r, const Reg64 &base, bool scalar,
                   int off = 0) {
        const RegExp a = elem_addr(base, scalar, off);
        switch (w_) {
            case 1: movzx(r.cvt32(), byte[a]); break;
            case 2: movzx(r.cvt32(), word[a]); break;
            case 4: mov(r.cvt32(), dword[a]); break;
            default: mov(r, qword[a]); break;
        }
    }
    void store_elem(const Reg64 &r, int off = 0) {
        const RegExp a = elem_addr(reg_dst_, false, off);
        switch (w_) {
            case 1: mov(byte[a], r.cvt8()); break;
            case 2: mov(word[a], r.cvt16()); break;
            case 4: mov(dword[a], r.cvt32()); break;
            default: mov(qword[a], r); break;
        }
    }
    void select_elem(int off = 0) {
        load_elem(reg_tmp_, reg_src0_, key_.src0_scalar, off);
        load_elem(reg_tmp2_, reg_src1_, key_.src1_scalar, off);
        cmp(byte[cond_addr(off)], 0);
        // 8-byte elements need the whole 64-bit registers.
        const Reg d = w_ == 8 ? Reg(reg_tmp_) : Reg(reg_tmp_.cvt32());
        const Reg s = w_ == 8 ? Reg(reg_tmp2_) : Reg(reg_tmp2_.cvt32());
        if (key_.invert_cond)
            cmovne(d, s);
        else
            cmove(d, s);
        store_elem(reg_tmp_, off);
    }
    void copy_elem(const Reg64 &src, bool scalar) {
        load_elem(reg_tmp_, src, scalar);
        store_elem(reg_tmp_);
    }

    // --- `bytes` (16, 8 or 4) of a row at reg_i_, in an xmm (AVX2, and
    // AVX-512's short rows) ------------------------------------------
    void load_part(const Xmm &x, const RegExp &a, int bytes) {
        switch (bytes) {
            case 16: vmovdqu(x, ptr[a]); break;
            case 8: vmovq(x, qword[a]); break;
            default: vmovd(x, dword[a]); break;
        }
    }
    void store_part(const RegExp &a, const Xmm &x, int bytes) {
        switch (bytes) {
            case 16: vmovdqu(ptr[a], x); break;
            case 8: vmovq(qword[a], x); break;
            default: vmovd(dword[a], x); break;
        }
    }
    // At element reg_i_ + off.
    void select_part(int bytes, int off = 0) {
        const Xmm va(key_.src0_scalar ? vmm_scalar_a_.getIdx() : vidx_a(0));
        const Xmm vb(key_.src1_scalar ? vmm_scalar_b_.getIdx() : vidx_b(0));
        if (!key_.src0_scalar)
            load_part(va, elem_addr(reg_src0_, false, off), bytes);
        if (!key_.src1_scalar)
            load_part(vb, elem_addr(reg_src1_, false, off), bytes);
        // The part's cond bytes (16 down to 2), loaded to the byte.
        const Xmm c(vidx_cond(0));
        const RegExp ca = cond_addr(off);
        switch (bytes / w_) {
            case 16: vmovdqu(c, ptr[ca]); break;
            case 8: vmovq(c, qword[ca]); break;
            case 4: vmovd(c, dword[ca]); break;
            default:
                movzx(reg_tmp2_.cvt32(), word[ca]);
                vmovd(c, reg_tmp2_.cvt32());
                break;
        }
        const Xmm vd(vidx_d(0));
        if constexpr (is_avx512) {
            // EVEX: a scalar src_1 may lie in xmm16-31.
            blend_by_cond_mask(vd, va, vb, c, k1);
        } else {
            cond_zero_lanes(c, nullptr);
            blend_by_cond(vd, va, vb, c);
        }
        store_part(elem_addr(reg_dst_, false, off), vd, bytes);
    }
    void copy_part(const Reg64 &src, bool scalar, const Vmm &vs, int bytes) {
        Xmm v(vs.getIdx());
        if (!scalar) {
            v = Xmm(vidx_a(0));
            load_part(v, elem_addr(src, false, 0), bytes);
        }
        store_part(elem_addr(reg_dst_, false, 0), v, bytes);
    }

    // Non-temporal rows: the first and last lines of the row `ahead` rows
    // on, where they take regular stores (they are not whole lines of it),
    // are asked for with intent to write (not past the call's last row).
    // L21 ran 1.05-1.2x faster on AVX2 (Zen 3), and its AVX-512
    // non-temporal kernel 1.2-1.3x (Zen 4; docs/performance.md).
    void prefetch_row_edges(int ahead) {
        if (!cpu_has_prefetchw())
            return;
        Label l_first_done, l_last;
        cmp(reg_rows_, ahead);
        jbe(l_last, T_NEAR);
        mov(reg_tmp_, ptr[reg_param_ + offsetof(select_call_args, dst_stride)]);
        if (ahead > 1)
            imul(reg_tmp_, reg_tmp_, ahead);
        add(reg_tmp_, reg_dst_);
        test(reg_tmp_.cvt8(), 63);
        jz(l_first_done, T_NEAR);
        prefetchw(ptr[reg_tmp_]);
        L(l_first_done);
        mov(reg_tmp2_, reg_n_);
        if (lw_)
            shl(reg_tmp2_, lw_);
        add(reg_tmp_, reg_tmp2_);
        test(reg_tmp_.cvt8(), 63);
        jz(l_last, T_NEAR);
        prefetchw(ptr[reg_tmp_ - 1]);
        L(l_last);
    }

    // --- the loop over one row -------------------------------------------
    // vec(u, off, masked) handles lanes_ elements at reg_i_ + off (masked:
    // the k_tail_ lanes, AVX-512 only); elem() handles the element at
    // reg_i_ and part(bytes) that many bytes at reg_i_ (AVX2).
    template <typename VecOp, typename ElemOp, typename PartOp>
    void row_loop(const VecOp &vec, const ElemOp &elem, const PartOp &part) {
        if constexpr (!is_avx512)
            if (key_.nt_stores) {
                row_loop_nt_lines(vec, elem, part);
                return;
            }
        Label l_done;
        xor_(reg_i_, reg_i_);
        if (key_.nt_stores) {
            // AVX-512 (AVX2 streams whole lines above). Head: the elements
            // until dst + i * w is vector-aligned (h of them), so that the
            // body's non-temporal stores are aligned (execute only picks
            // an nt kernel for a w-aligned dst). They go in the top h lanes
            // of the aligned vector that ends there, under a mask (at most
            // n lanes from lanes_ - h), so that their store stays in their
            // own line: a masked store reaching into the next line, which
            // the body then streams, ran padded rows (L21) 1.25-1.35x as long
            // on Zen 4 (docs/performance.md). Masked-off lanes read and
            // write nothing; the head does not prefetch.
            Label l_head_done;
            mov(reg_lim_, reg_dst_);
            neg(reg_lim_);
            and_(reg_lim_, vlen - 1);
            if (lw_)
                shr(reg_lim_, lw_);
            jz(l_head_done, T_NEAR);
            mov(reg_i_, lanes_);
            sub(reg_i_, reg_lim_); // the head's first lane
            cmp(reg_lim_, reg_n_);
            cmova(reg_lim_, reg_n_);
            lea(reg_tmp_, ptr[reg_i_ + reg_lim_]);
            mov(reg_tmp2_, -1);
            bzhi(reg_tmp2_, reg_tmp2_, reg_tmp_);
            mov(reg_tmp_, -1);
            shlx(reg_tmp_, reg_tmp_, reg_i_);
            and_(reg_tmp2_, reg_tmp_);
            kmovq(k_tail_, reg_tmp2_);
            neg(reg_i_);
            head_ = true;
            vec(0, 0, true);
            head_ = false;
            mov(reg_i_, reg_lim_);
            L(l_head_done);
        }
        whole_vectors(vec, reg_n_);
        // The tail: fewer than lanes_ elements.
        {
            mov(reg_tmp_, reg_n_);
            sub(reg_tmp_, reg_i_);
            jz(l_done, T_NEAR);
            if constexpr (is_avx512) {
                set_tail_mask(reg_tmp_);
                vec(0, 0, true);
                // Rows that end off a line: the edges of the row after the
                // next one (here, not at each row's start, costs nothing
                // where rows start and end lines).
                if (key_.nt_stores)
                    prefetch_row_edges(2);
            } else {
                mov(reg_lim_, reg_n_);
                regular_run(vec, elem, part);
            }
        }
        L(l_done);
    }

    // vec over the whole vectors from reg_i_ to `limit`: unroll_ at a time,
    // then one at a time, until fewer than lanes_ elements are left.
    template <typename VecOp>
    void whole_vectors(const VecOp &vec, const Reg64 &limit) {
        Label l_unrolled, l_single, l_done;
        L(l_unrolled);
        mov(reg_tmp_, limit);
        sub(reg_tmp_, reg_i_);
        cmp(reg_tmp_, unroll_ * lanes_);
        jb(l_single, T_NEAR);
        for (int u = 0; u < unroll_; ++u)
            vec(u, u * lanes_, false);
        add(reg_i_, unroll_ * lanes_);
        rotate_rows_masks(unroll_);
        jmp(l_unrolled, T_NEAR);
        L(l_single);
        mov(reg_tmp_, limit);
        sub(reg_tmp_, reg_i_);
        cmp(reg_tmp_, lanes_);
        jb(l_done, T_NEAR);
        vec(0, 0, false);
        add(reg_i_, lanes_);
        rotate_rows_masks(1);
        jmp(l_single, T_NEAR);
        L(l_done);
    }

    // AVX2: the elements [reg_i_, reg_lim_) with regular stores (vec's
    // `masked`): whole vectors, then the rest by one more vector that ends
    // at reg_lim_, overlapping the one before, where reg_lim_ >= lanes_
    // (the vector stays within the row) and elem_tail is 0; where
    // reg_lim_ < lanes_ (a row shorter than a vector, whatever elem_tail),
    // by two overlapping parts of the widest of 16, 8 and 4 bytes that
    // two cover the rest; else one element at a time. reg_i_ = reg_lim_
    // after. Callers keep the elements before reg_i_ that such a vector
    // may store again to regular stores, or pass `back = false`: the rest
    // after the whole vectors then always goes by parts (or elements), and
    // nothing before reg_i_ is stored.
    template <typename VecOp, typename ElemOp, typename PartOp>
    void regular_run(const VecOp &vec, const ElemOp &elem, const PartOp &part,
                     bool back = true) {
        Label l_vec, l_rest, l_part, l_elem, l_end;
        L(l_vec);
        mov(reg_tmp_, reg_lim_);
        sub(reg_tmp_, reg_i_);
        jz(l_end, T_NEAR);
        cmp(reg_tmp_, lanes_);
        jb(l_rest, T_NEAR);
        vec(0, 0, true);
        add(reg_i_, lanes_);
        jmp(l_vec, T_NEAR);
        L(l_rest);
        if (back) {
            cmp(reg_lim_, lanes_);
            jb(l_part, T_NEAR);
            cmp(qword[reg_param_ + offsetof(select_call_args, elem_tail)], 0);
            jne(l_elem, T_NEAR);
            mov(reg_i_, reg_lim_);
            sub(reg_i_, lanes_);
            vec(0, 0, true);
            mov(reg_i_, reg_lim_);
            jmp(l_end, T_NEAR);
        }
        // reg_tmp_ elements left, fewer than lanes_: parts of `bytes`
        // where bytes / w_ <= reg_tmp_ < 2 * bytes / w_ (at least two
        // elements a part).
        L(l_part);
        for (int bytes = vlen / 2; bytes >= 4 && bytes >= 2 * w_; bytes /= 2) {
            Label l_narrower;
            cmp(reg_tmp_, bytes / w_);
            jb(l_narrower, T_NEAR);
            part(bytes);
            mov(reg_i_, reg_lim_);
            sub(reg_i_, bytes / w_);
            part(bytes);
            mov(reg_i_, reg_lim_);
            jmp(l_end, T_NEAR);
            L(l_narrower);
        }
        L(l_elem);
        elem();
        inc(reg_i_);
        cmp(reg_i_, reg_lim_);
        jb(l_elem, T_NEAR);
        L(l_end);
    }

    // AVX2, non-temporal stores: a row's whole cache lines are streamed,
    // two vectors each, and the elements before its first streamed line
    // and after its last go by regular stores that never reach into a
    // streamed line (vec's `masked`). A row that does not start or end a
    // line (padded rows, rows of 788 bytes 800 apart) shares its first
    // and last lines with the rows beside it; streamed halves of such
    // lines, stored around regular stores, ran a padded Select at a third
    // of the speed of regular stores (docs/performance.md). Where the
    // elements before the first whole line (or after the last) are fewer
    // than a vector's, two overlapping parts of 16, 8 or 4 bytes store
    // them (regular_run without `back`): storing the line beside them
    // regularly too, so that whole vectors could, ran padded rows (L21)
    // 1.25x as long on Zen 4 (docs/performance.md), and one element at a
    // time took a third of a bf16 row of 394 bytes' time.
    template <typename VecOp, typename ElemOp, typename PartOp>
    void row_loop_nt_lines(const VecOp &vec, const ElemOp &elem,
                           const PartOp &part) {
        static_assert(2 * vlen == 64, "two AVX2 vectors to a line");
        const int line = 2 * lanes_;
        prefetch_row_edges(1);
        xor_(reg_i_, reg_i_);
        // Head: the elements until dst + i * w starts a line (all of a row
        // that ends before); from 0, so its overlapping vector, where it
        // has one, stays in it.
        mov(reg_lim_, reg_dst_);
        neg(reg_lim_);
        and_(reg_lim_, 63);
        if (lw_)
            shr(reg_lim_, lw_);
        cmp(reg_lim_, reg_n_);
        cmova(reg_lim_, reg_n_);
        regular_run(vec, elem, part);
        // The end of the streamed lines: the last whole line.
        mov(reg_lim_, reg_n_);
        sub(reg_lim_, reg_i_);
        and_(reg_lim_, ~static_cast<uint32_t>(line - 1));
        add(reg_lim_, reg_i_);
        // Body: [reg_i_, reg_lim_), whole lines, streamed; the unrolled
        // loop in pairs of vectors (an odd unroll takes one more).
        const int pairs = (unroll_ + 1) / 2;
        Label l_unrolled, l_line, l_tail;
        L(l_unrolled);
        mov(reg_tmp_, reg_lim_);
        sub(reg_tmp_, reg_i_);
        cmp(reg_tmp_, pairs * line);
        jb(l_line, T_NEAR);
        for (int u = 0; u < 2 * pairs; ++u)
            vec(u, u * lanes_, false);
        add(reg_i_, pairs * line);
        jmp(l_unrolled, T_NEAR);
        L(l_line);
        if (pairs > 1) {
            test(reg_tmp_, reg_tmp_);
            jz(l_tail, T_NEAR);
            vec(0, 0, false);
            vec(1, lanes_, false);
            add(reg_i_, line);
            mov(reg_tmp_, reg_lim_);
            sub(reg_tmp_, reg_i_);
            jmp(l_line, T_NEAR);
        }
        // Tail: the elements after the last streamed line, fewer than a
        // line's; an overlapping vector only where a whole one fits in.
        L(l_tail);
        Label l_tail_vector, l_tail_done;
        mov(reg_tmp_, reg_n_);
        sub(reg_tmp_, reg_i_);
        cmp(reg_tmp_, lanes_);
        mov(reg_lim_, reg_n_);
        jae(l_tail_vector, T_NEAR);
        regular_run(vec, elem, part, false);
        jmp(l_tail_done, T_NEAR);
        L(l_tail_vector);
        regular_run(vec, elem, part);
        L(l_tail_done);
    }

    // k_tail_ = the low `count` lanes (count < lanes_ <= 64).
    void set_tail_mask(const Reg64 &count) {
        mov(reg_tmp2_, -1);
        bzhi(reg_tmp2_, reg_tmp2_, count);
        kmovq(k_tail_, reg_tmp2_);
        if (rotating_rows())
            kmovq(k_rows_, ptr[reg_masks_ + reg_mask_at_]);
        if (key_.row_pitch)
            kandq(k_tail_rows_, k_tail_, k_rows_);
    }

    // rotating_rows: the masks of the vectors `count` on.
    void rotate_rows_masks(int count) {
        if (!rotating_rows())
            return;
        // The table's index stays below the period: at most one wrap.
        Label l_in;
        add(reg_mask_at_, count % rows_period() * 8);
        cmp(reg_mask_at_, rows_period() * 8);
        jb(l_in, T_NEAR);
        sub(reg_mask_at_, rows_period() * 8);
        L(l_in);
    }

    // kernel_key::row_pitch: the lanes of the stream's vector v that hold
    // row elements, (v * lanes_ + j) % pitch < n.
    uint64_t row_lanes_mask(int v) const {
        uint64_t m = 0;
        for (int j = 0; j < lanes_; ++j)
            if ((v * lanes_ + j) % key_.row_pitch < key_.row_len)
                m |= uint64_t { 1 } << j;
        return m;
    }

    // kernel_key::row_pitch: the call's rows as one row of (rows - 1) *
    // pitch + n elements, and k_rows_ = the lanes j with j % pitch < n
    // where pitch divides lanes_ (every vector of the stream starts a
    // row), else each vector's lanes from the table (rotating_rows).
    void set_row_pitch_stream() {
        const int pitch = key_.row_pitch;
        if (rotating_rows()) {
            lea(reg_masks_, ptr[rip + l_rows_masks_]);
            xor_(reg_mask_at_, reg_mask_at_);
        } else {
            mov(reg_tmp_, row_lanes_mask(0));
            kmovq(k_rows_, reg_tmp_);
        }
        dec(reg_rows_);
        imul(reg_rows_, reg_rows_, pitch);
        add(reg_n_, reg_rows_);
        mov(reg_rows_, 1);
    }

    // AVX2, kernel_key::row_pitch: the whole vectors of the call's stream
    // of (rows - 1) * pitch + n elements, each stored in its rows' pieces
    // (store_row_pieces); then one more vector, the last of the stream
    // that starts a row (its rows before the whole vectors' end stored
    // again with the same bits, as a row's overlapping last vector is),
    // and the last row one element at a time by the row loop, from the
    // pointers past the vectors: the vectors' loads are whole, and none
    // reaches past the stream's end. Without that vector the rows after the
    // whole vectors (up to lanes_ / pitch) ran one at a time: in tiles of
    // 224 rows of 3 bytes padded to 4 (L28), 8 rows of each tile.
    void row_pitch_stream_avx2() {
        const int pitch = key_.row_pitch;
        Label l_rows;
        mov(reg_lim_, reg_rows_);
        dec(reg_lim_);
        imul(reg_lim_, reg_lim_, pitch);
        add(reg_lim_, reg_n_);
        and_(reg_lim_, -lanes_);
        jz(l_rows, T_NEAR);
        if (key_.src1_scalar)
            broadcast_lanes(vmm_scalar_b_, reg_src1_);
        // reg_lim_ is a multiple of lanes_: every vector of the stream.
        xor_(reg_i_, reg_i_);
        gap_stores_ = true;
        whole_vectors([&](int u, int off,
                          bool masked) { select_vector(u, off, masked); },
                      reg_lim_);
        // The last vector that starts a row ends where the last row starts
        // ((rows - 1) * pitch: the pitch divides lanes_, and n < pitch),
        // where that is past the whole vectors.
        Label l_past;
        mov(reg_tmp_, reg_rows_);
        dec(reg_tmp_);
        imul(reg_tmp_, reg_tmp_, pitch);
        cmp(reg_tmp_, reg_lim_);
        jbe(l_past, T_NEAR);
        mov(reg_lim_, reg_tmp_);
        lea(reg_i_, ptr[reg_tmp_ - lanes_]);
        select_vector(0, 0, false);
        L(l_past);
        gap_stores_ = false;
        // Past the vectors: reg_lim_ elements, reg_lim_ / pitch rows.
        add(reg_cond_, reg_lim_);
        mov(reg_tmp_, reg_lim_);
        if (lw_)
            shl(reg_tmp_, lw_);
        add(reg_src0_, reg_tmp_);
        if (!key_.src1_scalar)
            add(reg_src1_, reg_tmp_);
        add(reg_dst_, reg_tmp_);
        shr(reg_lim_, ilog2(pitch));
        sub(reg_rows_, reg_lim_);
        L(l_rows);
    }

    // kernel_key::row_len without row_pitch: each row of the call, of
    // row_len elements (under 32 bytes), at the call's strides, four rows
    // an iteration, then one at a time. With the parts at constant
    // offsets, four an iteration ran AVX2's rows of 6-16 bytes in 0.75-0.95x
    // the time of one on Zen 5, and rows of 19-28 bytes in the same time
    // (docs/performance.md, "Four short rows an iteration on AVX2"; with
    // the parts at reg_i_, rows of 24-28 bytes had run 1.5x slower).
    void short_rows_loop() {
        const int unroll = 4;
        mov(reg_st_cond_,
            ptr[reg_param_ + offsetof(select_call_args, cond_stride)]);
        mov(reg_st_src0_,
            ptr[reg_param_ + offsetof(select_call_args, src0_stride)]);
        mov(reg_st_src1_,
            ptr[reg_param_ + offsetof(select_call_args, src1_stride)]);
        mov(reg_st_dst_,
            ptr[reg_param_ + offsetof(select_call_args, dst_stride)]);
        xor_(reg_i_, reg_i_);
        Label l_unrolled, l_one, l_done;
        if (unroll > 1) {
            L(l_unrolled);
            cmp(reg_rows_, unroll);
            jb(l_one, T_NEAR);
            for (int u = 0; u < unroll; ++u)
                short_row();
            sub(reg_rows_, unroll);
            jmp(l_unrolled, T_NEAR);
        }
        L(l_one);
        test(reg_rows_, reg_rows_);
        jz(l_done, T_NEAR);
        short_row();
        dec(reg_rows_);
        jmp(l_one, T_NEAR);
        L(l_done);
    }
    // One short row at the row pointers, which then step to the next: the
    // row's bytes in one part, or two overlapping ones, of the widest of
    // 16, 8 and 4 bytes that the row holds, where that part holds two
    // elements or more; else element by element. No masked access: on
    // Zen 5 a row of 3 f32 under masks ran as fast as two parts from L2
    // and 1.8x slower from DRAM (docs/performance.md, "Short rows").
    void short_row() {
        if (key_.src1_scalar)
            broadcast_lanes(vmm_scalar_b_, reg_src1_);
        const int bytes = key_.row_len * w_;
        int part = 16;
        while (part > bytes)
            part /= 2;
        // reg_i_ stays 0: the parts and elements at constant offsets.
        if (part >= 4 && part >= 2 * w_) {
            select_part(part);
            if (part != bytes)
                select_part(part, (bytes - part) / w_);
        } else {
            for (int e = 0; e < key_.row_len; ++e)
                select_elem(e);
        }
        add(reg_cond_, reg_st_cond_);
        add(reg_src0_, reg_st_src0_);
        add(reg_src1_, reg_st_src1_);
        add(reg_dst_, reg_st_dst_);
    }

    void generate() {
        if (saves_r13_r15())
            push_saved({ rbx, r12, r13, r14, r15 });
        else
            push_saved({ rbx, r12 });
        mov(reg_cond_, ptr[reg_param_ + offsetof(select_call_args, cond)]);
        mov(reg_src0_, ptr[reg_param_ + offsetof(select_call_args, src0)]);
        mov(reg_src1_, ptr[reg_param_ + offsetof(select_call_args, src1)]);
        mov(reg_dst_, ptr[reg_param_ + offsetof(select_call_args, dst)]);
        mov(reg_n_, ptr[reg_param_ + offsetof(select_call_args, n)]);
        mov(reg_rows_, ptr[reg_param_ + offsetof(select_call_args, rows)]);
        if constexpr (!is_avx512)
            vpxor(vmm_zero_, vmm_zero_, vmm_zero_);
        if (short_rows()) {
            short_rows_loop();
            postamble();
            return;
        }
        if (key_.row_pitch) {
            if constexpr (is_avx512)
                set_row_pitch_stream();
            else
                row_pitch_stream_avx2();
        }
        const Reg64 *const pf_reg[3] = { &reg_pf_cond_, &reg_pf_src0_,
                                         &reg_pf_src1_ };
        const Reg64 *const row_reg[3] = { &reg_cond_, &reg_src0_, &reg_src1_ };
        const size_t stride_at[3] = { offsetof(select_call_args, cond_stride),
                                      offsetof(select_call_args, src0_stride),
                                      offsetof(select_call_args, src1_stride) };
        if (key_.row_prefetch) {
            // Each input's pointer pf_rows rows on.
            mov(reg_tmp_,
                ptr[reg_param_ + offsetof(select_call_args, pf_rows)]);
            for (int i = 0; i < 3; ++i) {
                mov(*pf_reg[i], ptr[reg_param_ + stride_at[i]]);
                imul(*pf_reg[i], reg_tmp_);
                add(*pf_reg[i], *row_reg[i]);
            }
        }

        Label l_row;
        L(l_row);
        if (key_.row_prefetch) {
            // The last pf_rows rows of the call: no row pf_rows on; the
            // pointers follow the rows themselves (their lines are being
            // read), never beyond the call's last row.
            Label l_ahead;
            cmp(reg_rows_,
                ptr[reg_param_ + offsetof(select_call_args, pf_rows)]);
            ja(l_ahead, T_NEAR);
            for (int i = 0; i < 3; ++i)
                mov(*pf_reg[i], *row_reg[i]);
            L(l_ahead);
        }
        if (key_.cond_scalar)
            row_cond_scalar();
        else
            row_cond_vector();
        add(reg_cond_,
            ptr[reg_param_ + offsetof(select_call_args, cond_stride)]);
        add(reg_src0_,
            ptr[reg_param_ + offsetof(select_call_args, src0_stride)]);
        add(reg_src1_,
            ptr[reg_param_ + offsetof(select_call_args, src1_stride)]);
        add(reg_dst_, ptr[reg_param_ + offsetof(select_call_args, dst_stride)]);
        if (key_.row_prefetch)
            for (int i = 0; i < 3; ++i)
                add(*pf_reg[i], ptr[reg_param_ + stride_at[i]]);
        dec(reg_rows_);
        jnz(l_row, T_NEAR);
        postamble();
    }

    void postamble() {
        end_vector_code(reg_param_);
        pop_saved();
        ret();
        if (rotating_rows()) {
            // The row lanes of vectors 0 .. period + unroll - 1: an
            // unrolled step starting anywhere in the period reads on
            // without wrapping.
            align(8);
            L(l_rows_masks_);
            for (int v = 0; v < rows_period() + unroll_; ++v)
                dq(row_lanes_mask(v));
        }
    }

    void row_cond_vector() {
        // Scalar sources are broadcast once per row.
        if (key_.src0_scalar)
            broadcast_lanes(vmm_scalar_a_, reg_src0_);
        if (key_.src1_scalar)
            broadcast_lanes(vmm_scalar_b_, reg_src1_);
        row_loop([&](int u, int off,
                     bool masked) { select_vector(u, off, masked); },
                 [&] { select_elem(); },
                 [&](int bytes) { select_part(bytes); });
    }

    void row_cond_scalar() {
        // One cond byte decides the whole row: copy or fill from one source.
        Label l_take_b, l_row_done;
        cmp(byte[reg_cond_], 0);
        if (key_.invert_cond)
            jne(l_take_b, T_NEAR);
        else
            je(l_take_b, T_NEAR);
        row_copy(reg_src0_, key_.src0_scalar != 0, vmm_scalar_a_);
        jmp(l_row_done, T_NEAR);
        L(l_take_b);
        row_copy(reg_src1_, key_.src1_scalar != 0, vmm_scalar_b_);
        L(l_row_done);
    }

    void row_copy(const Reg64 &src, bool scalar, const Vmm &vs) {
        if (scalar)
            broadcast_lanes(vs, src);
        row_loop(
                [&](int u, int off, bool masked) {
                    copy_vector(src, scalar, vs, u, off, masked);
                },
                [&] { copy_elem(src, scalar); },
                [&](int bytes) { copy_part(src, scalar, vs, bytes); });
    }

    const int w_;
    const int lw_; // log2(w_)
    const int lanes_;
    const int unroll_;
};

} // namespace

bool row_len_supported(const kernel_key &key) {
    const bool avx512 = key.isa == kernel_isa::avx512_core;
    const int lanes = (avx512 ? 64 : 32) / std::max<int>(key.elem_size, 1);
    // AVX-512 any pitch up to a vector (rotating masks where it does not
    // divide the lanes); AVX2's pieces need pitches that divide them.
    const bool pitch_ok =
            key.row_pitch ? key.row_pitch >= 2 && key.row_pitch <= lanes
                                    && (avx512 || lanes % key.row_pitch == 0)
                                    && key.row_len < key.row_pitch
                          : key.row_len * key.elem_size < 32;
    return (avx512 || key.isa == kernel_isa::avx2) && !key.dst_transposed
           && !key.nt_stores && !key.row_prefetch && !key.cond_scalar
           && !key.src0_scalar && key.row_len >= 1 && pitch_ok;
}

std::shared_ptr<const select_kernel>
create_jit_select_kernel(const kernel_key &key) {
    bool key_ok = false;
    if (key.src0_step || key.dst_step)
        key_ok = stepped_supported(key);
    else if (key.dst_transposed)
        key_ok =
                dst_transposed_supported(key) && !key.row_pitch && !key.row_len;
    else
        key_ok =
                (key.elem_size == 1 || key.elem_size == 2 || key.elem_size == 4
                 || key.elem_size == 8)
                && key.unroll >= 1 && key.unroll <= 4 && !key.dt_prefetch
                && (!key.row_prefetch || key.nt_stores)
                && ((!key.row_pitch && !key.row_len) || row_len_supported(key));
    if (!key_ok)
        fail(status::unimplemented, "Select JIT: no kernel for ",
             kernel_name(key));
    if (key.src0_step || key.dst_step)
        return create_jit_select_stepped_kernel(key);
    if (key.dst_transposed)
        return create_jit_select_dt_kernel(key);
    switch (key.isa) {
        case kernel_isa::avx512_core:
            return make_jit_kernel<jit_select_t<kernel_isa::avx512_core, Zmm>>(
                    key);
        case kernel_isa::avx2:
            return make_jit_kernel<jit_select_t<kernel_isa::avx2, Ymm>>(key);
        default: break;
    }
    fail(status::unimplemented, "Select JIT: no kernel for ", kernel_name(key));
}

} // namespace impl
} // namespace selgraph
