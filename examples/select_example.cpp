// selgraph example: one Select op through the whole Graph API flow
// (graph -> partitions -> compile -> execute), three times:
//
//  1. The 3x2 example of the OpenVINO Select-1 specification, checked
//     against the values the specification gives.
//  2. An attention-mask fill as found in transformer models: a causal mask
//     cond [1,1,S,S] keeps the scores src_0 [B,H,S,S] on and below the
//     diagonal and puts src_1, a 0-D -inf, above it. Every element is
//     checked against a naive loop.
//  3. An integer Select from a generation loop, where(mask, token_ids,
//     pad_id): s64 token ids, a u8 mask of the finished positions and a 0-D
//     pad id; ids above 2^53 show that nothing goes through floating point.
//
// The program returns 0 when every element matches, 1 otherwise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "selgraph/selgraph.hpp"

namespace {

using lt = selgraph::logical_tensor;
using dt = lt::data_type;
using layout = lt::layout_type;

// Builds a graph with one Select op, returns its one partition.
selgraph::partition make_select_partition(const lt &cond, const lt &src_0,
                                          const lt &src_1, const lt &dst) {
    selgraph::op sel(0, selgraph::op::kind::Select, { cond, src_0, src_1 },
                     { dst }, "select");
    sel.set_attr(selgraph::op::attr::auto_broadcast, "numpy");

    selgraph::graph g(selgraph::engine::kind::cpu);
    g.add_op(sel);
    g.finalize();
    std::vector<selgraph::partition> parts = g.get_partitions();
    if (parts.size() != 1 || !parts[0].is_supported())
        throw selgraph::error(selgraph::status::unimplemented,
                              "expected one supported partition");
    return parts[0];
}

// Bitwise comparison, so that -inf, -0.0 and NaN payloads count too.
bool same_bits(float a, float b) {
    return std::memcmp(&a, &b, sizeof(float)) == 0;
}

// The 3x2 example of OpenVINO's Select-1 specification.
int run_openvino_example(selgraph::engine &eng, selgraph::stream &strm) {
    const lt::dims shape = { 3, 2 };
    const lt cond(0, dt::boolean, shape, layout::strided);
    const lt src_0(1, dt::f32, shape, layout::strided);
    const lt src_1(2, dt::f32, shape, layout::strided);
    const lt dst(3, dt::f32, shape, layout::strided);

    selgraph::partition part = make_select_partition(cond, src_0, src_1, dst);
    selgraph::compiled_partition cp =
            part.compile({ cond, src_0, src_1 }, { dst }, eng);

    // boolean is one byte per element; any non-zero byte is true.
    std::vector<uint8_t> cond_data = { 0, 0, 1, 0, 1, 1 };
    std::vector<float> then_data = { -1, 0, 1, 2, 3, 4 };
    std::vector<float> else_data = { 11, 10, 9, 8, 7, 6 };
    std::vector<float> out(6, 0.f);
    const std::vector<float> expected = { 11, 10, 1, 8, 3, 4 };

    selgraph::tensor t_cond(cond, eng, cond_data.data());
    selgraph::tensor t_src_0(src_0, eng, then_data.data());
    selgraph::tensor t_src_1(src_1, eng, else_data.data());
    selgraph::tensor t_dst(dst, eng, out.data());
    cp.execute(strm, { t_cond, t_src_0, t_src_1 }, { t_dst });
    strm.wait();

    std::printf("OpenVINO Select-1 example (cond ? then : else), 3x2 f32:\n");
    int mismatches = 0;
    for (int r = 0; r < 3; ++r) {
        std::printf("  ");
        for (int c = 0; c < 2; ++c) {
            const int i = r * 2 + c;
            std::printf("%5s ? %4g : %4g = %4g%s",
                        cond_data[i] ? "true" : "false", then_data[i],
                        else_data[i], out[i], c == 1 ? "\n" : "   |   ");
            if (!same_bits(out[i], expected[i]))
                ++mismatches;
        }
    }
    std::printf("  expected [[11, 10], [1, 8], [3, 4]]: %s\n\n",
                mismatches ? "MISMATCH" : "ok");
    return mismatches;
}

// The attention-mask fill: dst = mask ? scores : -inf.
int run_attention_mask(selgraph::engine &eng, selgraph::stream &strm) {
    const int64_t B = 2, H = 8, S = 128;
    const lt cond(10, dt::boolean, { 1, 1, S, S }, layout::strided);
    const lt scores(11, dt::f32, { B, H, S, S }, layout::strided);
    const lt neg_inf(12, dt::f32, lt::dims {}, layout::strided); // 0-D
    // dst: shape and layout left to the library, queried after compile.
    const lt dst(13, dt::f32, layout::any);

    selgraph::partition part =
            make_select_partition(cond, scores, neg_inf, dst);
    selgraph::compiled_partition cp =
            part.compile({ cond, scores, neg_inf }, { dst }, eng);
    const lt dst_c = cp.query_logical_tensor(dst.get_id());
    const lt::dims dst_dims = dst_c.get_dims();

    std::vector<uint8_t> mask(static_cast<size_t>(S * S));
    for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j)
            mask[static_cast<size_t>(i * S + j)] = j <= i; // causal
    std::vector<float> score_data(static_cast<size_t>(B * H * S * S));
    for (size_t i = 0; i < score_data.size(); ++i)
        score_data[i] =
                static_cast<float>(static_cast<int64_t>(i % 1999) - 999) / 64.f;
    float minus_inf = -std::numeric_limits<float>::infinity();
    std::vector<float> out(dst_c.get_mem_size() / sizeof(float), 0.f);

    selgraph::tensor t_cond(cond, eng, mask.data());
    selgraph::tensor t_scores(scores, eng, score_data.data());
    selgraph::tensor t_inf(neg_inf, eng, &minus_inf);
    selgraph::tensor t_dst(dst_c, eng, out.data());
    cp.execute(strm, { t_cond, t_scores, t_inf }, { t_dst });
    strm.wait();

    // Naive loop over dst, broadcasting by hand.
    int64_t mismatches = 0, masked = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < S; ++i)
                for (int64_t j = 0; j < S; ++j) {
                    const size_t o =
                            static_cast<size_t>(((b * H + h) * S + i) * S + j);
                    const bool c = mask[static_cast<size_t>(i * S + j)] != 0;
                    const float want = c ? score_data[o] : minus_inf;
                    masked += !c;
                    if (!same_bits(out[o], want)) {
                        if (mismatches < 5)
                            std::printf("  mismatch at [%lld,%lld,%lld,%lld]: "
                                        "got %g, expected %g\n",
                                        static_cast<long long>(b),
                                        static_cast<long long>(h),
                                        static_cast<long long>(i),
                                        static_cast<long long>(j), out[o],
                                        want);
                        ++mismatches;
                    }
                }

    const char *isa_name[] = { "none (reference kernel)", "avx2", "avx512_core",
                               "all" };
    std::printf("Attention mask: dst = causal_mask[1,1,%lld,%lld] ? "
                "scores[%lld,%lld,%lld,%lld] : -inf (0-D)\n",
                static_cast<long long>(S), static_cast<long long>(S),
                static_cast<long long>(B), static_cast<long long>(H),
                static_cast<long long>(S), static_cast<long long>(S));
    std::printf("  dst dims [%lld,%lld,%lld,%lld], %zu elements, %lld set to "
                "-inf\n",
                static_cast<long long>(dst_dims[0]),
                static_cast<long long>(dst_dims[1]),
                static_cast<long long>(dst_dims[2]),
                static_cast<long long>(dst_dims[3]), out.size(),
                static_cast<long long>(masked));
    std::printf("  dst[0,0,1,0..3] = %g %g %g %g\n", out[S], out[S + 1],
                out[S + 2], out[S + 3]);
    std::printf("  kernel ISA: %s\n",
                isa_name[static_cast<int>(selgraph::get_effective_cpu_isa())]);
    std::printf("  checked against a naive loop: %s (%lld mismatches)\n",
                mismatches ? "MISMATCH" : "ok",
                static_cast<long long>(mismatches));
    return mismatches ? 1 : 0;
}

// where(mask, token_ids, pad_id) on s64, with a u8 mask.
int run_token_padding(selgraph::engine &eng, selgraph::stream &strm) {
    const int64_t B = 3, T = 10;
    const lt mask(20, dt::u8, { B, T }, layout::strided);
    const lt ids(21, dt::s64, { B, T }, layout::strided);
    const lt pad(22, dt::s64, lt::dims {}, layout::strided); // 0-D
    const lt dst(23, dt::s64, layout::any);

    selgraph::partition part = make_select_partition(mask, ids, pad, dst);
    selgraph::compiled_partition cp =
            part.compile({ mask, ids, pad }, { dst }, eng);
    const lt dst_c = cp.query_logical_tensor(dst.get_id());

    // Row b keeps its first 4 + 3 * b tokens; the rest become pad_id.
    std::vector<uint8_t> keep(static_cast<size_t>(B * T));
    std::vector<int64_t> token_ids(static_cast<size_t>(B * T));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const size_t i = static_cast<size_t>(b * T + t);
            keep[i] = t < 4 + 3 * b ? 1 : 0;
            token_ids[i] = (int64_t(1) << 53) + 1 + b * 1000 + t;
        }
    int64_t pad_id = -1;
    std::vector<int64_t> out(dst_c.get_mem_size() / sizeof(int64_t), 0);

    selgraph::tensor t_mask(mask, eng, keep.data());
    selgraph::tensor t_ids(ids, eng, token_ids.data());
    selgraph::tensor t_pad(pad, eng, &pad_id);
    selgraph::tensor t_dst(dst_c, eng, out.data());
    cp.execute(strm, { t_mask, t_ids, t_pad }, { t_dst });
    strm.wait();

    int64_t mismatches = 0;
    for (size_t i = 0; i < out.size(); ++i)
        mismatches += out[i] != (keep[i] ? token_ids[i] : pad_id);
    std::printf("\nToken padding: dst = mask[%lld,%lld] (u8) ? token_ids (s64) "
                ": pad_id (0-D s64)\n",
                static_cast<long long>(B), static_cast<long long>(T));
    for (int64_t b = 0; b < B; ++b) {
        std::printf("  row %lld:", static_cast<long long>(b));
        for (int64_t t = 0; t < T; ++t) {
            const int64_t v = out[static_cast<size_t>(b * T + t)];
            if (v == pad_id)
                std::printf(" pad");
            else
                std::printf(" 2^53+%lld",
                            static_cast<long long>(v - (int64_t(1) << 53)));
        }
        std::printf("\n");
    }
    std::printf("  checked against a naive loop: %s (%lld mismatches)\n",
                mismatches ? "MISMATCH" : "ok",
                static_cast<long long>(mismatches));
    return mismatches ? 1 : 0;
}

} // namespace

int main() {
    try {
        selgraph::engine eng(selgraph::engine::kind::cpu, 0);
        selgraph::stream strm(eng);
        int failures = run_openvino_example(eng, strm);
        failures += run_attention_mask(eng, strm);
        failures += run_token_padding(eng, strm);
        std::printf("%s\n", failures ? "FAILED" : "PASSED");
        return failures ? 1 : 0;
    } catch (const selgraph::error &e) {
        std::fprintf(stderr, "selgraph error (%s): %s\n",
                     selgraph::status2str(e.status), e.what());
        return 1;
    }
}
