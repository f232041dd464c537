// Data types: the numeric values of the data_type enum (oneDNN's, plus
// selgraph's extensions), unknown dims, Select on every type with a byte
// width through the API with a boolean or a u8 cond, bit for bit (f64 NaN
// payloads and -0.0, s64/u64 extremes, f8 raw bytes, cond bytes 0/1/2/255),
// and the types Select refuses.
#include "tests/api_test_utils.hpp"

using namespace sgt;

namespace {

int value(dt t) {
    return static_cast<int>(t);
}

} // namespace

TEST(ApiTypes, DataTypeValuesAreOneDnns) {
    // dnnl_data_type_t (oneDNN v3): the numbers of the issue and of
    // oneDNN's dnnl_common_types.h.
    EXPECT_EQ(value(dt::undef), 0);
    EXPECT_EQ(value(dt::f16), 1);
    EXPECT_EQ(value(dt::bf16), 2);
    EXPECT_EQ(value(dt::f32), 3);
    EXPECT_EQ(value(dt::s32), 4);
    EXPECT_EQ(value(dt::s8), 5);
    EXPECT_EQ(value(dt::u8), 6);
    EXPECT_EQ(value(dt::f64), 7);
    EXPECT_EQ(value(dt::boolean), 8);
    EXPECT_EQ(value(dt::f8_e5m2), 9);
    EXPECT_EQ(value(dt::f8_e4m3), 10);
    EXPECT_EQ(value(dt::s4), 11);
    EXPECT_EQ(value(dt::u4), 12);
    EXPECT_EQ(value(dt::s64), 16);
}

TEST(ApiTypes, ExtensionsCollideWithNoOneDnnValue) {
    // u16, s16, u32, u64 are selgraph's own: distinct from each other and
    // outside the range oneDNN numbers its types in (0 to 16 so far; its
    // dnnl_data_type_max is 0x7fff).
    const int ext[] = { value(dt::u16), value(dt::s16), value(dt::u32),
                        value(dt::u64) };
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_GT(ext[i], 16) << i;
        EXPECT_LT(ext[i], 0x7fff) << i;
        for (size_t j = 0; j < i; ++j)
            EXPECT_NE(ext[i], ext[j]);
    }
}

TEST(ApiTypes, UnknownDimIsOneDnnV3s) {
    EXPECT_EQ(lt::unknown_dim, INT64_MIN);
    // Both unknown_dim and -1 mean unknown.
    const lt a(1, dt::f32, { lt::unknown_dim, 4 }, lyt::strided);
    EXPECT_EQ(a.get_dims(), (dims { lt::unknown_dim, 4 }));
    EXPECT_SG_ERROR(a.get_mem_size(), status::invalid_shape, "logical tensor 1",
                    "unknown");
    const lt b(2, dt::f32, { -1, 4 }, lyt::strided);
    EXPECT_SG_ERROR(b.get_mem_size(), status::invalid_shape, "logical tensor 2",
                    "unknown");
    // A rank-only tensor has unknown_dim dims.
    const lt c(3, dt::f32, 2, lyt::strided);
    EXPECT_EQ(c.get_dims(), (dims { lt::unknown_dim, lt::unknown_dim }));
}

TEST(ApiTypes, OtherNegativeDimsAreInvalidShape) {
    for (int64_t bad : { int64_t(-2), int64_t(-100), INT64_MIN + 1 }) {
        EXPECT_SG_ERROR(lt(41, dt::f32, { 2, bad }, lyt::strided),
                        status::invalid_shape, "logical tensor 41",
                        std::to_string(bad));
        EXPECT_SG_ERROR(lt(42, dt::s64, { bad }, dims { 1 }),
                        status::invalid_shape, "logical tensor 42",
                        std::to_string(bad));
    }
}

TEST(ApiTypes, UnknownDimsAtCompile) {
    // Inputs must have known dims at compile; dst's unknown ones, -1 or
    // unknown_dim, are inferred.
    const lt c(0, dt::boolean, { 2, 3 }, lyt::strided);
    const lt a(1, dt::s64, { 2, 3 }, lyt::strided);
    const lt b(2, dt::s64, dims { 3 }, lyt::strided);
    for (int64_t u : { int64_t(-1), lt::unknown_dim }) {
        const lt d(3, dt::s64, { u, 3 }, lyt::strided);
        const auto cp = compile_select(c, a, b, d, 43);
        EXPECT_EQ(cp.query_logical_tensor(3).get_dims(), (dims { 2, 3 }));
        EXPECT_EQ(cp.query_logical_tensor(3).get_strides(), (dims { 3, 1 }));
        const lt a_unknown(1, dt::s64, { u, 3 }, lyt::strided);
        const auto p = select_partition(c, a_unknown, b, d, 44);
        EXPECT_SG_ERROR(p.compile({ c, a_unknown, b }, { d }, cpu_engine()),
                        status::invalid_shape, "Select op 44", "src_0",
                        "unknown dims");
    }
}

TEST(ApiTypes, MemSizeOfEveryType) {
    for (dt t : all_select_types())
        EXPECT_EQ(lt(1, t, { 3, 5 }, lyt::strided).get_mem_size(),
                  15 * elem_size(t))
                << dt_name(t);
    EXPECT_EQ(lt(1, dt::f64, dims {}, lyt::strided).get_mem_size(), 8u);
    EXPECT_EQ(lt(1, dt::u64, { 2, 3 }, dims { 4, 1 }).get_mem_size(),
              (4u + 2u + 1u) * 8u);
}

TEST(ApiTypes, EveryTypeEveryCondTypeThroughTheApi) {
    // Patterns that reach every kernel variant (vector, per-row, 0-D, row
    // vector operands), lengths around the vector widths of 8-byte lanes.
    struct shapes {
        dims c, a, b, d;
    };
    const std::vector<shapes> cases = {
        { { 3, 37 }, { 3, 37 }, { 3, 37 }, { 3, 37 } },
        { { 3, 1 }, { 3, 37 }, { 3, 37 }, { 3, 37 } },
        { {}, { 4, 9 }, { 9 }, { 4, 9 } },
        { { 65 }, { 2, 65 }, {}, { 2, 65 } },
        { { 2, 130 }, {}, { 2, 130 }, { 2, 130 } },
        { { 1, 1, 5, 16 }, { 2, 3, 5, 16 }, {}, { 2, 3, 5, 16 } },
        { { 5, 1 }, { 5, 1 }, { 1, 33 }, { 5, 33 } },
    };
    uint32_t seed = 100;
    for (dt t : all_select_types())
        for (dt ct : { dt::boolean, dt::u8 })
            for (const auto &sh : cases) {
                select_case sc;
                sc.type = t;
                sc.cond_type = ct;
                sc.cond.d = sh.c;
                sc.src0.d = sh.a;
                sc.src1.d = sh.b;
                sc.dst.d = sh.d;
                sc.seed = ++seed;
                run_select_case(sc);
            }
}

namespace {

// Raw patterns per element size that a conversion, a float blend or a
// narrower move would change.
std::vector<uint64_t> raw_patterns(size_t w) {
    switch (w) {
        case 8:
            return {
                0x7ff8000000000001ull, // f64 quiet NaN, payload 1
                0x7ff0000000000001ull, // f64 signalling NaN
                0xfff8dead0000beefull, // negative NaN with a payload
                0x8000000000000000ull, // f64 -0.0 and INT64_MIN
                0x7fffffffffffffffull, // INT64_MAX
                0xffffffffffffffffull, // UINT64_MAX, -1
                0x0000000000000001ull, // smallest f64 denormal
                0x0000000100000000ull, // only the high half set
                0x00000000ffffffffull, // only the low half set
                0x0000000000000000ull,
            };
        case 4:
            return { 0x7fc00001u, 0x7f800001u, 0x80000000u, 0x7fffffffu,
                     0xffffffffu, 0x00000001u, 0x0000ffffu, 0xffff0000u };
        case 2:
            return { 0x7e01u, 0x7c01u, 0x8000u, 0x7fffu,
                     0xffffu, 0x0001u, 0x00ffu, 0xff00u };
        default:
            // f8_e4m3 NaN 0x7f/0xff, f8_e5m2 inf 0x7c and NaN 0x7d, -0 0x80,
            // s8 extremes 0x7f/0x80, u8 0xff.
            return { 0x7fu, 0xffu, 0x7cu, 0x7du, 0x80u, 0x01u, 0xfeu, 0x00u };
    }
}

} // namespace

TEST(ApiTypes, RawBitsAndCondBytesWrittenOut) {
    // cond bytes 0, 1, 2, 255 (and others): every non-zero byte is true,
    // for a boolean and for a u8 cond. The expected bytes are composed
    // here from the inputs, element by element.
    const uint8_t cond_bytes[] = { 0, 1, 2, 255, 0, 0x80, 0x7f, 0, 3 };
    const int64_t n = 45; // several vectors of every width, and a tail
    for (dt t : all_select_types())
        for (dt ct : { dt::boolean, dt::u8 }) {
            SCOPED_TRACE(testing::Message()
                         << dt_name(t) << " cond " << dt_name(ct));
            const size_t w = elem_size(t);
            const auto pats = raw_patterns(w);
            std::vector<uint8_t> cond(n), a(n * w), b(n * w), want(n * w);
            for (int64_t i = 0; i < n; ++i) {
                cond[i] = cond_bytes[i % sizeof(cond_bytes)];
                const uint64_t va = pats[i % pats.size()];
                const uint64_t vb = ~pats[(i + 3) % pats.size()];
                std::memcpy(&a[i * w], &va, w);
                std::memcpy(&b[i * w], &vb, w);
                std::memcpy(&want[i * w], cond[i] != 0 ? &va : &vb, w);
            }
            const lt lc(0, ct, dims { n }, lyt::strided);
            const lt la(1, t, dims { n }, lyt::strided);
            const lt lb(2, t, dims { n }, lyt::strided);
            const lt ld(3, t, dims { n }, lyt::strided);
            const auto cp = compile_select(lc, la, lb, ld, 45);
            buffer out(n * w);
            out.fill(0xA5);
            cp.execute(cpu_stream(),
                       { selgraph::tensor(lc, cpu_engine(), cond.data()),
                         selgraph::tensor(la, cpu_engine(), a.data()),
                         selgraph::tensor(lb, cpu_engine(), b.data()) },
                       { selgraph::tensor(ld, cpu_engine(), out.data()) });
            EXPECT_TRUE(same_bytes(out.data(), want.data(), n * w, w));
            for (size_t k = n * w; k < out.bytes; ++k)
                ASSERT_EQ(out.data()[k], 0xA5) << "guard byte " << k;
        }
}

TEST(ApiTypes, IntegerSelectWithAScalarPad) {
    // where(mask, token_ids, pad_id) on s64, values past 2^53 that a trip
    // through f64 would round.
    const int64_t ids[6] = { 1,         (int64_t(1) << 53) + 1,
                             -7,        INT64_MAX,
                             INT64_MIN, 42 };
    const uint8_t mask[6] = { 1, 1, 0, 1, 1, 0 };
    const int64_t pad = -(int64_t(1) << 60) - 3;
    const lt lc(0, dt::boolean, { 2, 3 }, lyt::strided);
    const lt la(1, dt::s64, { 2, 3 }, lyt::strided);
    const lt lb(2, dt::s64, dims {}, lyt::strided);
    const lt ld(3, dt::s64, lyt::any);
    const auto cp = compile_select(lc, la, lb, ld, 46);
    const lt qd = cp.query_logical_tensor(3);
    EXPECT_EQ(qd.get_dims(), (dims { 2, 3 }));
    EXPECT_EQ(qd.get_mem_size(), 48u);
    int64_t out[6] = {};
    cp.execute(
            cpu_stream(),
            { selgraph::tensor(lc, cpu_engine(), const_cast<uint8_t *>(mask)),
              selgraph::tensor(la, cpu_engine(), const_cast<int64_t *>(ids)),
              selgraph::tensor(lb, cpu_engine(), const_cast<int64_t *>(&pad)) },
            { selgraph::tensor(qd, cpu_engine(), out) });
    const int64_t want[6] = { 1,         (int64_t(1) << 53) + 1,
                              pad,       INT64_MAX,
                              INT64_MIN, pad };
    for (int i = 0; i < 6; ++i)
        EXPECT_EQ(out[i], want[i]) << i;
}

TEST(ApiTypes, PackedFourBitTypesAreUnimplemented) {
    for (dt t : { dt::s4, dt::u4 }) {
        const lt c(0, dt::boolean, { 2, 3 }, lyt::strided);
        const lt a(1, t, { 2, 3 }, lyt::strided);
        const lt b(2, t, { 2, 3 }, lyt::strided);
        const lt d(3, t, { 2, 3 }, lyt::strided);
        selgraph::graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(make_select_op(47, c, a, b, d)),
                        status::unimplemented, "Select op 47", dt_name(t),
                        "4-bit", "not implemented");
        EXPECT_EQ(g.add_op(make_select_op(47, c, a, b, d), false),
                  status::unimplemented);
        // Mixed with another type it is a type mismatch first.
        const lt b32(2, dt::s32, { 2, 3 }, lyt::strided);
        EXPECT_SG_ERROR(g.add_op(make_select_op(48, c, a, b32, d)),
                        status::invalid_data_type, "Select op 48", "src_1",
                        "s32", dt_name(t));
    }
}

TEST(ApiTypes, MixedTypesStayAnError) {
    const lt c(0, dt::boolean, dims { 2 }, lyt::strided);
    struct mix {
        dt a, b, d;
        const char *port;
    };
    const mix cases[] = {
        { dt::s64, dt::u64, dt::s64, "src_1" },
        { dt::f64, dt::f64, dt::s64, "dst" },
        { dt::s32, dt::u32, dt::s32, "src_1" },
        { dt::s16, dt::s16, dt::f16, "dst" },
        { dt::s8, dt::u8, dt::s8, "src_1" },
        { dt::f8_e5m2, dt::f8_e4m3, dt::f8_e5m2, "src_1" },
        { dt::u8, dt::boolean, dt::u8, "src_1" },
    };
    for (const auto &m : cases) {
        const lt a(1, m.a, dims { 2 }, lyt::strided);
        const lt b(2, m.b, dims { 2 }, lyt::strided);
        const lt d(3, m.d, dims { 2 }, lyt::strided);
        selgraph::graph g(selgraph::engine::kind::cpu);
        EXPECT_SG_ERROR(g.add_op(make_select_op(49, c, a, b, d)),
                        status::invalid_data_type, "Select op 49",
                        std::string("port ") + m.port, dt_name(m.a));
    }
}

TEST(ApiTypes, EightByteHandlesMustBeAligned) {
    const lt c(0, dt::boolean, dims { 4 }, lyt::strided);
    const lt a(1, dt::f64, dims { 4 }, lyt::strided);
    const lt b(2, dt::f64, dims { 4 }, lyt::strided);
    const lt d(3, dt::f64, dims { 4 }, lyt::strided);
    const auto cp = compile_select(c, a, b, d, 50);
    alignas(16) uint8_t buf[4 * 8 + 8] = {};
    uint8_t cb[4] = { 1, 0, 1, 0 };
    EXPECT_SG_ERROR(cp.execute(cpu_stream(),
                               { selgraph::tensor(c, cpu_engine(), cb),
                                 selgraph::tensor(a, cpu_engine(), buf + 4),
                                 selgraph::tensor(b, cpu_engine(), buf) },
                               { selgraph::tensor(d, cpu_engine(), buf) }),
                    status::invalid_arguments, "Select op 50", "src_0",
                    "8-byte");
}
