// The generated kernels through the kernel ABI directly
// (create_jit_select_kernel + a hand-made select_call_args), bit for bit
// against impl::ref_select: every kernel_key (element sizes 1, 2, 4, 8,
// scalar/vector operands, inverted cond, unrolls, non-temporal stores, the
// row prefetch with rows ahead within and past the call),
// row lengths around the vector and unroll widths, several rows with padded
// or broadcast (stride 0) rows, misaligned pointers, every dst alignment of
// the non-temporal kernels, cond bytes other than 0/1 and special bit
// patterns. For the NONE ISA the reference kernel runs the same cases and
// is checked against the naive oracle.
#include <xbyak/xbyak.h>

#include "kernel_test_utils.hpp"

namespace selgraph_test {
namespace {

using kernel_abi = isa_test;

/// The four operands of an abi_case, each at a random offset in a canary
/// buffer: random cond bytes, random source values, random dst bits.
struct abi_buffers {
    canary_buf cond, a, b, dst;
    abi_buffers(const abi_case &c, std::mt19937_64 &g)
        : cond(c.bytes(0), g() % 64)
        , a(c.bytes(1), (g() % 16) * static_cast<size_t>(c.w()))
        , b(c.bytes(2), (g() % 16) * static_cast<size_t>(c.w()))
        , dst(c.bytes(3), (g() % 16) * static_cast<size_t>(c.w())) {
        const int w = c.w();
        fill_cond(cond.data(), cond.size(), g);
        fill_values(a.data(), a.size() / static_cast<size_t>(w), w, g);
        fill_values(b.data(), b.size() / static_cast<size_t>(w), w, g);
        fill_bytes(dst.data(), dst.size(), g);
    }
};

using abi_harness =
        callee_saved_harness<si::select_kernel_fn, si::select_call_args>;

/// Whether `kern` keeps the callee-saved registers over one call of `c`
/// (its key, n, rows and strides) on zeroed buffers.
::testing::AssertionResult keeps_callee_saved(const abi_harness &harness,
                                              const si::select_kernel &kern,
                                              const abi_case &c) {
    std::vector<uint8_t> buf[4];
    void *ptr[4];
    for (int op = 0; op < 4; ++op) {
        buf[op].assign(c.bytes(op), 0);
        ptr[op] = buf[op].data();
    }
    const si::select_call_args args = c.args(ptr[0], ptr[1], ptr[2], ptr[3]);
    uint64_t out[8] = {};
    harness.get()(kern.fn(), &args, out);
    return abi_harness::preserved(out, kern.name());
}

/// `k` has no kernel: refused with unimplemented, never made.
void expect_refused(const si::kernel_key &k) {
    try {
        (void)si::create_jit_select_kernel(k);
        ADD_FAILURE() << "a kernel was made for " << si::kernel_name(k);
    } catch (const sg::error &e) {
        EXPECT_EQ(e.status, sg::status::unimplemented) << e.what();
    }
}

/// Every valid key (element sizes 1, 2, 4, 8; unrolls 1..4; nt or not;
/// the nt ones also with row_prefetch) except cond_scalar with invert_cond,
/// which the dispatcher never makes and which has its own test; `nt_only`:
/// the nt keys with unroll 1 and 4.
std::vector<si::kernel_key> all_keys(si::kernel_isa isa, bool nt_only) {
    std::vector<si::kernel_key> keys;
    for (int w : { 1, 2, 4, 8 })
        for (int cs = 0; cs < 2; ++cs)
            for (int inv = 0; inv < 2; ++inv) {
                if (cs && inv)
                    continue; // see CondScalarInvertIsHonouredOrRejected
                for (int as = 0; as < 2; ++as)
                    for (int bs = 0; bs < 2; ++bs)
                        for (int nt = nt_only ? 1 : 0; nt < 2; ++nt)
                            for (int u = 1; u <= 4; ++u) {
                                if (nt_only && u != 4 && u != 1)
                                    continue;
                                keys.push_back(make_key(isa, w, cs, inv, as, bs,
                                                        nt, u));
                                if (nt)
                                    keys.push_back(make_pf_key(isa, w, cs, inv,
                                                               as, bs, u));
                            }
            }
    return keys;
}

/// The kernel of `key`, or null for the reference ISA.
std::shared_ptr<const si::select_kernel> make_kernel(const si::kernel_key &k) {
    if (k.isa == si::kernel_isa::ref)
        return nullptr;
    return si::create_jit_select_kernel(k);
}

/// Byte strides of a case: `layout` 0 dense rows (scalars per row), 1
/// padded rows with cond and the scalars shared by every row (stride 0).
void set_strides(abi_case &c, int layout) {
    const int64_t w = c.w();
    const int64_t n = static_cast<int64_t>(c.n);
    if (layout == 0) {
        c.stride[0] = c.key.cond_scalar ? 1 : n;
        c.stride[1] = c.key.src0_scalar ? w : n * w;
        c.stride[2] = c.key.src1_scalar ? w : n * w;
        c.stride[3] = n * w;
    } else {
        c.stride[0] = 0;
        c.stride[1] = c.key.src0_scalar ? 0 : (n + 5) * w;
        c.stride[2] = c.key.src1_scalar ? 0 : (n + 11) * w;
        c.stride[3] = (n + 3) * w;
    }
}

TEST_P(kernel_abi, KeyAndNameContract) {
    if (!jit()) {
        // The reference ISA has no generated kernels.
        si::kernel_key k {};
        k.isa = si::kernel_isa::ref;
        k.elem_size = 4;
        k.unroll = 4;
        try {
            (void)si::create_jit_select_kernel(k);
            FAIL() << "create_jit_select_kernel made a kernel for isa ref";
        } catch (const sg::error &e) {
            EXPECT_EQ(e.status, sg::status::unimplemented) << e.what();
        }
        return;
    }
    for (const auto &k : all_keys(kisa(), false)) {
        const auto kern = si::create_jit_select_kernel(k);
        ASSERT_TRUE(kern);
        EXPECT_TRUE(kern->key() == k) << si::kernel_name(k);
        EXPECT_EQ(kern->name(), si::kernel_name(k));
        EXPECT_EQ(kern->name().rfind(si::kernel_isa2str(kisa()), 0), 0u)
                << kern->name();
        EXPECT_EQ(kern->name().find("_nt") != std::string::npos,
                  k.nt_stores != 0)
                << kern->name();
        EXPECT_EQ(kern->name().find("_pf") != std::string::npos,
                  k.row_prefetch != 0)
                << kern->name();
        EXPECT_NE(kern->fn(), nullptr);
    }
    // The documented example.
    si::kernel_key ex {};
    ex.isa = si::kernel_isa::avx512_core;
    ex.elem_size = 4;
    ex.src1_scalar = 1;
    ex.nt_stores = 1;
    ex.unroll = 4;
    EXPECT_EQ(si::kernel_name(ex), "avx512_core_e4_cv_av_bs_u4_nt");
    ex.row_prefetch = 1;
    EXPECT_EQ(si::kernel_name(ex), "avx512_core_e4_cv_av_bs_u4_pf_nt");
    si::kernel_key gap = ex;
    gap.row_prefetch = 0;
    gap.nt_stores = 0;
    gap.row_pitch = 4;
    gap.row_len = 3;
    EXPECT_EQ(si::kernel_name(gap), "avx512_core_e4_cv_av_bs_u4_g4_n3");
    // The row prefetch is the non-temporal row kernel's only.
    si::kernel_key pf_regular = ex;
    pf_regular.isa = kisa();
    pf_regular.nt_stores = 0;
    si::kernel_key pf_dt = ex;
    pf_dt.isa = kisa();
    pf_dt.dst_transposed = 1;
    pf_dt.unroll = 0;
    for (const si::kernel_key &k : { pf_regular, pf_dt })
        expect_refused(k);
    pf_dt.row_prefetch = 0;
    EXPECT_NO_THROW((void)si::create_jit_select_kernel(pf_dt))
            << si::kernel_name(pf_dt) << " is made without the row prefetch";
    // Keys without a kernel are refused with unimplemented, never crash.
    struct bad {
        int w, u;
    };
    for (const bad b : { bad { 3, 4 }, bad { 16, 4 }, bad { 0, 4 },
                         bad { 4, 0 }, bad { 4, 5 }, bad { 2, 16 } }) {
        si::kernel_key k {};
        k.isa = kisa();
        k.elem_size = static_cast<uint8_t>(b.w);
        k.unroll = static_cast<uint8_t>(b.u);
        expect_refused(k);
    }
}

TEST_P(kernel_abi, AllKeysAllSizesBitExact) {
    const auto keys = all_keys(kisa(), false);
    std::vector<std::shared_ptr<const si::select_kernel>> kernels;
    for (const auto &k : keys)
        kernels.push_back(make_kernel(k));
    auto &g = rng();
    int fails = 0;
    for (uint64_t n : sweep_sizes())
        for (uint64_t rows : { 1u, 3u })
            for (int layout = 0; layout < 2; ++layout) {
                // Inputs off the vector alignment in the second layout
                // (element-aligned for every width, as execute requires).
                const size_t mis = layout ? 1 : 0;
                const size_t cap = static_cast<size_t>(rows) * (n + 16) * 8;
                canary_buf cond(cap, mis * 3), a(cap, mis * 8),
                        b(cap, mis * 24);
                fill_cond(cond.data(), cap, g);
                int filled_w = 0; // sources hold this size's special values
                for (size_t ki = 0; ki < keys.size(); ++ki) {
                    abi_case c;
                    c.key = keys[ki];
                    if (c.w() != filled_w) {
                        filled_w = c.w();
                        fill_values(a.data(), cap / filled_w, filled_w, g);
                        fill_values(b.data(), cap / filled_w, filled_w, g);
                    }
                    c.n = n;
                    c.rows = rows;
                    c.elem_tail = (n + rows) % 2;
                    // The prefetch's rows ahead: none, within the call, or
                    // past its last row.
                    c.pf_rows = c.key.row_prefetch ? (n + ki) % 4 : 0;
                    set_strides(c, layout);
                    const size_t dbytes = c.bytes(si::op_dst);
                    canary_buf dst(dbytes, layout ? c.w() * 3 : 0);
                    fill_bytes(dst.data(), dbytes, g);
                    const auto fn = kernels[ki] ? kernels[ki]->fn() : nullptr;
                    KT_EXPECT(fails,
                              run_abi_case(c, fn, cond.data(), a.data(),
                                           b.data(), dst.data()),
                              c.str());
                    KT_EXPECT(fails, dst.canaries_ok(), c.str());
                }
            }
}

TEST_P(kernel_abi, NonTemporalEveryDstAlignment) {
    // Non-temporal kernels align the body with a head; dst is at every
    // offset that is a multiple of the element size, and the rows shift
    // the alignment further.
    const auto keys = all_keys(kisa(), true);
    std::vector<std::shared_ptr<const si::select_kernel>> kernels;
    for (const auto &k : keys) {
        kernels.push_back(make_kernel(k));
        if (kernels.back()) {
            ASSERT_EQ(kernels.back()->key().nt_stores, 1);
        }
    }
    auto &g = rng();
    int fails = 0;
    static const uint64_t sizes[] = { 1,   2,   7,   15,  16,  17,  31,
                                      33,  63,  64,  65,  127, 128, 129,
                                      255, 256, 257, 300, 513, 1000 };
    for (uint64_t n : sizes) {
        const uint64_t rows = 2;
        const size_t cap = rows * (n + 8) * 8;
        canary_buf cond(cap), a(cap, 8), b(cap, 24);
        fill_cond(cond.data(), cap, g);
        int filled_w = 0;
        for (size_t ki = 0; ki < keys.size(); ++ki) {
            const int w = keys[ki].elem_size;
            if (w != filled_w) {
                filled_w = w;
                fill_values(a.data(), cap / w, w, g);
                fill_values(b.data(), cap / w, w, g);
            }
            for (int off = 0; off < 64; off += w) {
                abi_case c;
                c.key = keys[ki];
                c.n = n;
                c.rows = rows;
                c.elem_tail = static_cast<uint64_t>(off / w) % 2;
                c.pf_rows = c.key.row_prefetch ? 1 : 0;
                set_strides(c, 0);
                c.stride[3] = static_cast<int64_t>(n + 1) * w;
                const size_t dbytes = c.bytes(si::op_dst);
                canary_buf dst(dbytes, static_cast<size_t>(off));
                fill_bytes(dst.data(), dbytes, g);
                const auto fn = kernels[ki] ? kernels[ki]->fn() : nullptr;
                KT_EXPECT(fails,
                          run_abi_case(c, fn, cond.data(), a.data(), b.data(),
                                       dst.data()),
                          c.str() + " dst offset " + std::to_string(off));
                KT_EXPECT(fails, dst.canaries_ok(),
                          c.str() + " dst offset " + std::to_string(off));
            }
        }
    }
}

TEST_P(kernel_abi, InPlaceEveryTailAndDstAlignment) {
    // dst on a vector source's own bytes (the in-place pair; the kernel's
    // src_1 slot after the dispatcher's swap), every row length up to two
    // unrolled bodies and one, at several dst alignments, with and without
    // elem_tail: AVX2 stores the elements of a row's overlapping head and
    // tail vectors twice, and the second store must give the bits the
    // first did. Rows are padded, so each row starts at another alignment.
    const auto keys = all_keys(kisa(), false);
    auto &g = rng();
    int fails = 0;
    for (const auto &key : keys) {
        if (key.unroll != 1 && key.unroll != 4)
            continue;
        const auto kern = make_kernel(key);
        const int w = key.elem_size;
        // The reference kernel has no vectors: a few lengths check it.
        const uint64_t most =
                kern ? static_cast<uint64_t>(2 * key.unroll * lanes(w)) : 16;
        for (int slot = 1; slot <= 2; ++slot) {
            if (slot == 1 ? key.src0_scalar : key.src1_scalar)
                continue;
            for (uint64_t n = 1; n <= most + 1; ++n)
                for (int off : { 0, w, 64 - w }) {
                    abi_case c;
                    c.key = key;
                    c.n = n;
                    c.rows = 3;
                    c.elem_tail = (n + static_cast<uint64_t>(off)) % 2;
                    set_strides(c, 0);
                    c.stride[3] = static_cast<int64_t>(n + 1) * w;
                    c.stride[slot] = c.stride[3];
                    const size_t cap = c.rows * (n + 1) * 8 + 64;
                    canary_buf cond(cap), other(cap, 8),
                            dst(c.bytes(si::op_dst), static_cast<size_t>(off));
                    fill_cond(cond.data(), cap, g);
                    fill_values(other.data(), cap / w, w, g);
                    fill_values(dst.data(), c.bytes(si::op_dst) / w, w, g);
                    const void *src0 = slot == 1 ? dst.data() : other.data();
                    const void *src1 = slot == 2 ? dst.data() : other.data();
                    const std::string what =
                            c.str() + " dst on src slot " + std::to_string(slot)
                            + ", offset " + std::to_string(off);
                    KT_EXPECT(fails,
                              run_abi_case(c, kern ? kern->fn() : nullptr,
                                           cond.data(), src0, src1, dst.data()),
                              what);
                    KT_EXPECT(fails, dst.canaries_ok(), what);
                }
        }
    }
}

TEST_P(kernel_abi, CondBytesAndSpecialValues) {
    // cond[i] = i for every byte value: only 0 is false. The sources hold
    // NaN payloads, -0.0, s64/u64 extremes and raw 8- and 16-bit patterns
    // that a float blend or a conversion would change. Expected values are
    // written out here, independently of the reference kernel.
    for (int w : { 1, 2, 4, 8 })
        for (int inv = 0; inv < 2; ++inv)
            for (uint64_t n : { 256u, 255u, 300u }) {
                si::kernel_key k {};
                k.isa = kisa();
                k.elem_size = static_cast<uint8_t>(w);
                k.invert_cond = static_cast<uint8_t>(inv);
                k.unroll = 4;
                const auto kern = make_kernel(k);
                const auto &sp = special_bits(w);
                std::vector<uint8_t> cond(n), a(n * w), b(n * w), dst(n * w),
                        want(n * w);
                for (uint64_t i = 0; i < n; ++i) {
                    cond[i] = static_cast<uint8_t>(i);
                    const uint64_t va = sp[i % sp.size()];
                    const uint64_t vb = sp[(i + 5) % sp.size()] ^ 0x1u;
                    std::memcpy(&a[i * w], &va, w);
                    std::memcpy(&b[i * w], &vb, w);
                    const bool c = cond[i] != 0;
                    std::memcpy(&want[i * w], (c != (inv != 0)) ? &va : &vb, w);
                }
                std::memset(dst.data(), 0xcd, dst.size());
                abi_case c;
                c.key = k;
                c.n = n;
                if (kern) {
                    si::select_call_args args {};
                    args.cond = cond.data();
                    args.src0 = a.data();
                    args.src1 = b.data();
                    args.dst = dst.data();
                    args.n = n;
                    args.rows = 1;
                    kern->fn()(&args);
                } else {
                    const si::select_nd p = c.nd();
                    si::ref_select(p, cond.data(), inv ? b.data() : a.data(),
                                   inv ? a.data() : b.data(), dst.data(), 1);
                }
                EXPECT_TRUE(bytes_equal(dst.data(), want.data(), dst.size(), w))
                        << c.str();
            }
}

TEST_P(kernel_abi, ElemSize1HandMadeArgs) {
    // Elem size 1 is not a graph data type; the ABI supports it: a
    // hand-made select_call_args over 2 rows, src_1 a per-row scalar.
    si::kernel_key k {};
    k.isa = kisa();
    k.elem_size = 1;
    k.src1_scalar = 1;
    k.unroll = 4;
    const auto kern = make_kernel(k);
    for (uint64_t n : { 1u, 63u, 64u, 65u, 200u, 257u }) {
        const uint64_t rows = 2;
        std::vector<uint8_t> cond(n), a(rows * n),
                b = { 0xee, 0x11 }, dst(rows * n, 0), want(rows * n);
        for (uint64_t i = 0; i < n; ++i)
            cond[i] = i % 3 == 0 ? 0 : static_cast<uint8_t>(0x80 | i);
        for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t i = 0; i < n; ++i) {
                a[r * n + i] = static_cast<uint8_t>(i * 7 + r);
                want[r * n + i] = cond[i] ? a[r * n + i] : b[r];
            }
        si::select_call_args args {};
        args.cond = cond.data();
        args.src0 = a.data();
        args.src1 = b.data();
        args.dst = dst.data();
        args.n = n;
        args.rows = rows;
        args.cond_stride = 0; // one cond row for both rows
        args.src0_stride = static_cast<int64_t>(n);
        args.src1_stride = 1;
        args.dst_stride = static_cast<int64_t>(n);
        if (kern) {
            kern->fn()(&args);
        } else {
            abi_case c;
            c.key = k;
            c.n = n;
            c.rows = rows;
            c.stride[0] = 0;
            c.stride[1] = static_cast<int64_t>(n);
            c.stride[2] = 1;
            c.stride[3] = static_cast<int64_t>(n);
            si::ref_select(c.nd(), cond.data(), a.data(), b.data(), dst.data(),
                           1);
        }
        EXPECT_TRUE(bytes_equal(dst.data(), want.data(), dst.size(), 1))
                << "n=" << n;
    }
}

TEST_P(kernel_abi, RandomCallsFuzz) {
    // Random keys, lengths (many near multiples of the vector and unroll
    // widths), row counts, row strides (padded, shared rows with stride 0,
    // gaps between per-row scalars) and pointer offsets.
    const auto keys = all_keys(kisa(), false);
    std::vector<std::shared_ptr<const si::select_kernel>> kernels;
    for (const auto &k : keys)
        kernels.push_back(make_kernel(k));
    std::mt19937_64 g(4242);
    int fails = 0;
    for (int i = 0; i < 3000; ++i) {
        const size_t ki = g() % keys.size();
        abi_case c;
        c.key = keys[ki];
        const int w = c.w();
        const uint64_t block = static_cast<uint64_t>(lanes(w)) * c.key.unroll;
        const int kind = static_cast<int>(g() % 20);
        c.n = kind < 10 ? 1 + g() % 300
              : kind < 15
                      ? 300 + g() % 2700
                      : std::max<int64_t>(
                              1, static_cast<int64_t>(block * (1 + g() % 6))
                                         + static_cast<int64_t>(g() % 3) - 1);
        c.rows = 1 + g() % 4;
        c.pf_rows = c.key.row_prefetch ? g() % 6 : 0;
        const int64_t n = static_cast<int64_t>(c.n);
        for (int op = 0; op < 4; ++op) {
            const int64_t es = c.esize(op);
            if (c.scalar(op))
                c.stride[op] = es * static_cast<int64_t>(g() % 3);
            else if (op != si::op_dst && g() % 5 == 0)
                c.stride[op] = 0; // every row reads the same row
            else
                c.stride[op] = (n + static_cast<int64_t>(g() % 21)) * es;
        }
        abi_buffers bufs(c, g);
        canary_buf &cond = bufs.cond, &a = bufs.a, &b = bufs.b, &dst = bufs.dst;
        const auto fn = kernels[ki] ? kernels[ki]->fn() : nullptr;
        KT_EXPECT(fails,
                  run_abi_case(c, fn, cond.data(), a.data(), b.data(),
                               dst.data()),
                  "case " + std::to_string(i) + " " + c.str());
        KT_EXPECT(fails, dst.canaries_ok(), c.str());
    }
}

TEST_P(kernel_abi, RowPitchKernelsOverPitchesRowsAndLengths) {
    // kernel_key::row_pitch called directly: rows of n elements whose rows
    // lie `pitch` elements apart in every operand (cond `pitch` bytes; a
    // scalar src_1 at stride 0), a kernel for each n < pitch (row_len),
    // every pitch that divides the vector's lanes, every element size
    // (AVX2 stores each row in pieces of 16, 8, 4, 2 and 1 bytes: every
    // combination of them for 1-byte rows of up to 31; from a general
    // register where a row and its gap fit in 8 bytes), row counts around
    // the vector and the unroll, cond inverted or not, and in place (dst
    // on src_0's bytes). dst's gaps and the canaries after the last row
    // keep their bytes; each vector is compared with ref_select bit for
    // bit. Malformed keys are refused.
    if (!jit())
        return;
    auto &g = rng();
    int fails = 0;
    const abi_harness harness;
    const bool avx512 = kisa() == si::kernel_isa::avx512_core;
    for (int w : { 1, 2, 4, 8 }) {
        const int lanes = (avx512 ? 64 : 32) / w;
        // Powers of two, and on AVX-512 pitches that do not divide the
        // lanes (rotating masks, periods of 3 to 63 vectors).
        std::vector<int> pitches;
        for (int pitch = 2; pitch <= lanes; pitch *= 2)
            pitches.push_back(pitch);
        if (avx512)
            for (int pitch : { 3, 5, 6, 7, 12, 13, 24, 25, 48, 63 })
                if (pitch <= lanes)
                    pitches.push_back(pitch);
        for (int pitch : pitches)
            for (int n = 1; n < pitch; ++n) {
                // Every n for the short pitches and for AVX2's byte rows;
                // else 1, 2, 3, pitch - 1 and a few more.
                if (pitch > 8 && !(kisa() == si::kernel_isa::avx2 && w == 1)
                    && n > 3 && n != pitch - 1
                    && n % (pitch / 4) != pitch / 4 - 1)
                    continue;
                for (int inv = 0; inv < 2; ++inv)
                    for (int bs = 0; bs < 2; ++bs) {
                        si::kernel_key k =
                                make_key(kisa(), w, 0, inv, 0, bs, 0, 4);
                        k.row_pitch = static_cast<uint8_t>(pitch);
                        k.row_len = static_cast<uint8_t>(n);
                        const auto kern = si::create_jit_select_kernel(k);
                        EXPECT_EQ(kern->name(), si::kernel_name(k));
                        EXPECT_NE(kern->name().find("_g" + std::to_string(pitch)
                                                    + "_n" + std::to_string(n)),
                                  std::string::npos);
                        abi_case c;
                        c.key = k;
                        c.n = static_cast<uint64_t>(n);
                        c.stride[0] = pitch;
                        c.stride[1] = pitch * w;
                        c.stride[2] = bs ? 0 : pitch * w;
                        c.stride[3] = pitch * w;
                        if (n == pitch - 1) {
                            // The callee-saved registers, over a call of a
                            // few rows.
                            c.rows = static_cast<uint64_t>(2 * lanes / pitch
                                                           + 1);
                            EXPECT_TRUE(keeps_callee_saved(harness, *kern, c));
                        }
                        for (int64_t rows :
                             { int64_t { 1 }, int64_t { 2 },
                               int64_t { lanes / pitch },
                               int64_t { lanes / pitch + 1 },
                               int64_t { 4 * lanes / pitch + 1 },
                               int64_t { 9 * lanes / pitch + 3 },
                               // Two periods of rotating masks and more.
                               int64_t { 2 * lanes + 5 } }) {
                            if (rows < 1)
                                continue;
                            c.rows = static_cast<uint64_t>(rows);
                            abi_buffers bufs(c, g);
                            canary_buf &cond = bufs.cond, &a = bufs.a,
                                       &b = bufs.b, &dst = bufs.dst;
                            KT_EXPECT(fails,
                                      run_abi_case(c, kern->fn(), cond.data(),
                                                   a.data(), b.data(),
                                                   dst.data()),
                                      c.str());
                            KT_EXPECT(fails, dst.canaries_ok(), c.str());
                            // In place, dst on src_0's bytes: AVX2 stores
                            // the rows its last vector shares with the
                            // whole vectors twice, and the second store
                            // must give the bits the first did.
                            canary_buf in_place(c.bytes(3), 8);
                            fill_values(in_place.data(),
                                        in_place.size()
                                                / static_cast<size_t>(w),
                                        w, g);
                            KT_EXPECT(fails,
                                      run_abi_case(c, kern->fn(), cond.data(),
                                                   in_place.data(), b.data(),
                                                   in_place.data()),
                                      c.str() + " in place");
                            KT_EXPECT(fails, in_place.canaries_ok(),
                                      c.str() + " in place");
                        }
                    }
            }
    }
    // Refused: with nt stores, a per-row cond, a pitch of 1, one past a
    // vector (AVX2: one that does not divide the lanes), no row length, a
    // row length of the pitch.
    si::kernel_key bad = make_key(kisa(), 4, 0, 0, 0, 0, 0, 4);
    bad.row_pitch = 4;
    bad.row_len = 3;
    si::kernel_key bads[6] = { bad, bad, bad, bad, bad, bad };
    bads[0].nt_stores = 1;
    bads[1].cond_scalar = 1;
    bads[2].row_pitch = 1;
    bads[2].row_len = 0;
    // AVX-512: past a vector of 16 f32; AVX2: not dividing its 8.
    bads[3].row_pitch = avx512 ? 17 : 3;
    bads[3].row_len = 2;
    bads[4].row_len = 0;
    bads[5].row_len = 4;
    for (const si::kernel_key &k : bads)
        expect_refused(k);
}

TEST_P(kernel_abi, ShortRowKernelsOverLengthsAndStrides) {
    // kernel_key::row_len without row_pitch called directly: a kernel for
    // each row length under 32 bytes, every element size, cond inverted or
    // not, src_1 a vector or one element per row; row counts around
    // the four rows an iteration; each operand at a row stride of
    // its own (src_1 also 0: one row, or one element, read by every row).
    // Compared with ref_select bit for bit, dst's gaps and the
    // canaries after the last row unchanged, the callee-saved registers
    // kept. Keys of 32 bytes a row and more, and a row length with nt
    // stores, are refused.
    if (!jit())
        return;
    auto &g = rng();
    int fails = 0;
    const abi_harness harness;
    for (int w : { 1, 2, 4, 8 })
        for (int n = 1; n * w < 32; ++n)
            for (int inv = 0; inv < 2; ++inv)
                for (int bs = 0; bs < 2; ++bs) {
                    si::kernel_key k = make_key(kisa(), w, 0, inv, 0, bs, 0, 4);
                    k.row_len = static_cast<uint8_t>(n);
                    const auto kern = si::create_jit_select_kernel(k);
                    EXPECT_EQ(kern->name(), si::kernel_name(k));
                    EXPECT_NE(kern->name().find("_u4_n" + std::to_string(n)),
                              std::string::npos)
                            << kern->name();
                    {
                        abi_case c;
                        c.key = k;
                        c.n = static_cast<uint64_t>(n);
                        c.rows = 6;
                        const int64_t st[4] = { n + 1, (n + 2) * w, (n + 3) * w,
                                                (n + 1) * w };
                        std::copy(st, st + 4, c.stride);
                        EXPECT_TRUE(keeps_callee_saved(harness, *kern, c));
                    }
                    for (int64_t rows : { 1, 2, 3, 4, 5, 8, 9, 13 })
                        for (int st = 0; st < 3; ++st) {
                            abi_case c;
                            c.key = k;
                            c.n = static_cast<uint64_t>(n);
                            c.rows = static_cast<uint64_t>(rows);
                            c.stride[0] = st == 1 ? n : 2 * n + 1;
                            c.stride[1] = (n + st) * w;
                            // 0: src_1 one row for all (a vector) or one
                            // element for all (a scalar).
                            c.stride[2] = st == 2 ? 0 : (n + 7) * w;
                            c.stride[3] = (st == 1 ? n : n + 3) * w;
                            abi_buffers bufs(c, g);
                            KT_EXPECT(fails,
                                      run_abi_case(c, kern->fn(),
                                                   bufs.cond.data(),
                                                   bufs.a.data(), bufs.b.data(),
                                                   bufs.dst.data()),
                                      c.str());
                            KT_EXPECT(fails, bufs.dst.canaries_ok(), c.str());
                        }
                }
    si::kernel_key bad = make_key(kisa(), 4, 0, 0, 0, 0, 0, 4);
    si::kernel_key bads[3] = { bad, bad, bad };
    bads[0].row_len = 8; // 32 bytes
    bads[1].row_len = 3;
    bads[1].nt_stores = 1;
    bads[2].row_len = 3;
    bads[2].cond_scalar = 1;
    for (const si::kernel_key &k : bads)
        expect_refused(k);
}

// Tests of generated code: instantiated for the JIT ISAs only.
using kernel_abi_jit = kernel_abi;

TEST_P(kernel_abi_jit, CalleeSavedRegistersPreserved) {
    ASSERT_TRUE(jit()) << "instantiated for the JIT ISAs only";
    const abi_harness h;
    auto &g = rng();
    int fails = 0;
    for (const auto &k : all_keys(kisa(), false)) {
        const auto kern = make_kernel(k);
        abi_case c;
        c.key = k;
        c.n = 77;
        c.rows = 3;
        set_strides(c, 0);
        std::vector<uint8_t> cond(c.bytes(0)), a(c.bytes(1)), b(c.bytes(2)),
                dst(c.bytes(3)), want(c.bytes(3));
        fill_cond(cond.data(), cond.size(), g);
        fill_bytes(a.data(), a.size(), g);
        fill_bytes(b.data(), b.size(), g);
        fill_bytes(dst.data(), dst.size(), g);
        want = dst;
        const void *pa = k.invert_cond ? b.data() : a.data();
        const void *pb = k.invert_cond ? a.data() : b.data();
        si::ref_select(c.nd(), cond.data(), pa, pb, want.data(), 1);
        si::select_call_args args {};
        args.cond = cond.data();
        args.src0 = a.data();
        args.src1 = b.data();
        args.dst = dst.data();
        args.n = c.n;
        args.rows = c.rows;
        args.cond_stride = c.stride[0];
        args.src0_stride = c.stride[1];
        args.src1_stride = c.stride[2];
        args.dst_stride = c.stride[3];
        args.pf_rows = k.row_prefetch ? 1 : 0;
        uint64_t out[8] = {};
        h.get()(kern->fn(), &args, out);
        const char *names[6] = { "rbx", "rbp", "r12", "r13", "r14", "r15" };
        for (int i = 0; i < 6; ++i)
            KT_EXPECT(fails,
                      out[i] == abi_harness::magic[i]
                              ? ::testing::AssertionSuccess()
                              : ::testing::AssertionFailure()
                                        << names[i] << " clobbered",
                      kern->name());
        KT_EXPECT(fails,
                  out[6] == out[7]
                          ? ::testing::AssertionSuccess()
                          : ::testing::AssertionFailure() << "rsp changed",
                  kern->name());
        KT_EXPECT(fails,
                  bytes_equal(dst.data(), want.data(), dst.size(), c.w()),
                  kern->name());
    }
}

TEST_P(kernel_abi_jit, CondScalarInvertIsHonouredOrRejected) {
    // kernel_key documents invert_cond as "take src_0 where cond is zero"
    // and kernel_name spells it (_csn). The dispatcher only inverts with a
    // vector cond, but the ABI accepts every key: a kernel made for
    // cond_scalar + invert_cond must honour the inversion, or
    // create_jit_select_kernel must refuse the key.
    ASSERT_TRUE(jit()) << "instantiated for the JIT ISAs only";
    int fails = 0;
    for (int w : { 1, 2, 4, 8 })
        for (int as = 0; as < 2; ++as)
            for (int bs = 0; bs < 2; ++bs) {
                si::kernel_key k {};
                k.isa = kisa();
                k.elem_size = static_cast<uint8_t>(w);
                k.cond_scalar = 1;
                k.invert_cond = 1;
                k.src0_scalar = static_cast<uint8_t>(as);
                k.src1_scalar = static_cast<uint8_t>(bs);
                k.unroll = 4;
                std::shared_ptr<const si::select_kernel> kern;
                try {
                    kern = si::create_jit_select_kernel(k);
                } catch (const sg::error &e) {
                    EXPECT_EQ(e.status, sg::status::unimplemented);
                    continue; // refused: fine
                }
                auto &g = rng();
                for (uint64_t n : { 1u, 17u, 100u }) {
                    abi_case c;
                    c.key = k;
                    c.n = n;
                    c.rows = 4;
                    set_strides(c, 0);
                    std::vector<uint8_t> cond = { 0, 1, 0x80, 0 };
                    std::vector<uint8_t> a(c.bytes(1)), b(c.bytes(2)),
                            dst(c.bytes(3));
                    fill_values(a.data(), a.size() / w, w, g);
                    fill_values(b.data(), b.size() / w, w, g);
                    fill_bytes(dst.data(), dst.size(), g);
                    KT_EXPECT(fails,
                              run_abi_case(c, kern->fn(), cond.data(), a.data(),
                                           b.data(), dst.data()),
                              c.str()
                                      + " (cond per row {0,1,0x80,0}; "
                                        "invert_cond must take src_0 where "
                                        "cond is 0)");
                }
            }
}

SELGRAPH_INSTANTIATE_PER_ISA(kernel_abi);
SELGRAPH_INSTANTIATE_PER_JIT_ISA(kernel_abi_jit);

} // namespace
} // namespace selgraph_test
