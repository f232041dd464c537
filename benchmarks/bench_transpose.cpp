// The transposing kernel alone (diagnostic), one thread:
//
//   tr<c>/e<w>/b<blocks>/transpose_<isa>   the JIT transpose of `blocks`
//                                          source blocks, one after the
//                                          other, into one scratch, each
//                                          as the tiled path calls it
//                                          (transpose_block)
//   tr<c>/e<w>/b<blocks>/memcpy            memcpy of the same blocks into
//                                          the same scratch
//
// Each block is one channels-last image of c channels (c elements of w
// bytes back to back per pixel) transposed into c rows of its pixels:
// tr64, an image of layout case L4 ([3136, 64] into [64, 3136], the way
// each panel's transpose runs), tr12, twelve channels ([50176, 12] into
// [12, 50176]: bytes run AVX-512's calls of at most a lane of rows,
// wider elements the register tiles) and tr3, one of L16 ([50176, 3] into
// [3, 50176], the packed path of jit_transpose.hpp). 1, 16 and 128 blocks put
// the source in L2, in a large L3 or beyond it, whichever those are on the
// machine measured. GB/s counts the source bytes, so that transpose / memcpy is
// the ratio of the times: how far the transposing phase of the tiled path is
// from a plain copy of the same bytes in the same place (docs/performance.md,
// layouts).
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "bench_harness.hpp"
#include "bench_selgraph.hpp"
#include "kernels/jit_transpose.hpp"
#include "src/dispatch.hpp"
#include "kernels/ref_transpose.hpp"

namespace sgbench {

namespace {

struct tr_data {
    int w;
    int blocks;
    int64_t tr_rows, tr_cols; // channels, pixels
    int64_t block_bytes;
    buffer src, scratch;

    tr_data(int w_, int blocks_, int channels)
        : w(w_)
        , blocks(blocks_)
        , tr_rows(channels)
        , tr_cols(channels == 64 ? 56 * 56 : 224 * 224)
        , block_bytes(tr_rows * tr_cols * w_)
        , src(static_cast<size_t>(block_bytes * blocks_))
        , scratch(static_cast<size_t>(block_bytes)) {
        auto *p = static_cast<uint8_t *>(src.get());
        for (int64_t i = 0; i < block_bytes * blocks; ++i)
            p[i] = static_cast<uint8_t>(i * 131 + (i >> 8) * 7);
        std::memset(scratch.get(), 0, static_cast<size_t>(block_bytes));
    }

    selgraph::impl::transpose_call_args args(int b) const {
        selgraph::impl::transpose_call_args a;
        a.src = static_cast<const uint8_t *>(src.get()) + b * block_bytes;
        a.dst = scratch.get();
        a.rows = tr_rows;
        a.cols = tr_cols;
        a.src_ld = tr_rows * w;
        a.dst_ld = tr_cols * w;
        a.pf_cols = tr_cols; // the tiled path's own prefetch
        return a;
    }
};

tr_data &tr_data_for(int w, int blocks, int channels) {
    static std::map<std::tuple<int, int, int>, std::unique_ptr<tr_data>> cache;
    std::unique_ptr<tr_data> &d = cache[{ w, blocks, channels }];
    if (!d)
        d = std::make_unique<tr_data>(w, blocks, channels);
    return *d;
}

enum class tr_impl { jit, copy };

void bm_transpose(benchmark::State &st, int w, int blocks, int channels,
                  tr_impl kind, selgraph::cpu_isa isa) {
    tr_data &d = tr_data_for(w, blocks, channels);
    std::function<void()> fn;
    if (kind == tr_impl::copy) {
        fn = [&d] {
            for (int b = 0; b < d.blocks; ++b)
                std::memcpy(d.scratch.get(),
                            static_cast<const uint8_t *>(d.src.get())
                                    + b * d.block_bytes,
                            static_cast<size_t>(d.block_bytes));
        };
        st.SetLabel("memcpy of the same blocks into the same scratch");
    } else {
        if (!cpu_runs(isa)) {
            st.SkipWithError("the CPU lacks this ISA");
            return;
        }
        using selgraph::impl::kernel_isa;
        const kernel_isa kisa = isa == selgraph::cpu_isa::avx512_core
                                        ? kernel_isa::avx512_core
                                        : kernel_isa::avx2;
        // The key (packed limit included) the library uses on this CPU.
        const selgraph::impl::transpose_kernel *k =
                selgraph::impl::get_transpose_kernel(
                        selgraph::impl::tuned_transpose_key(kisa, w, false));
        // Checked against the reference on the last block before timing.
        const auto bytes = static_cast<size_t>(d.block_bytes);
        buffer want(bytes);
        const selgraph::impl::transpose_call_args last = d.args(blocks - 1);
        selgraph::impl::transpose_call_args ref = last;
        ref.dst = want.get();
        selgraph::impl::ref_transpose(ref, w);
        std::memset(d.scratch.get(), 0xA5, bytes);
        selgraph::impl::transpose_block(*k, last, w);
        if (std::memcmp(want.get(), d.scratch.get(), bytes) != 0) {
            st.SkipWithError("the transpose differs from the reference");
            return;
        }
        fn = [&d, k] {
            for (int b = 0; b < d.blocks; ++b) {
                const selgraph::impl::transpose_call_args ab = d.args(b);
                selgraph::impl::transpose_block(*k, ab, d.w);
            }
        };
        st.SetLabel(k->name());
    }
    time_loop(st, fn);
    set_counters(st, d.block_bytes * d.blocks, d.tr_rows * d.tr_cols * d.blocks,
                 1);
}

} // namespace

void register_transpose() {
    for (int c : { 64, 12, 3 })
        for (int w : { 4, 2, 1 })
            for (int blocks : { 1, 16, 128 }) {
                const std::string base = "tr" + std::to_string(c) + "/e"
                                         + std::to_string(w) + "/b"
                                         + std::to_string(blocks) + "/";
                for (auto isa : { selgraph::cpu_isa::avx512_core,
                                  selgraph::cpu_isa::avx2 })
                    finish(benchmark::RegisterBenchmark(
                            (base + "transpose_" + isa_short_name(isa)).c_str(),
                            [w, blocks, c, isa](benchmark::State &st) {
                                bm_transpose(st, w, blocks, c, tr_impl::jit,
                                             isa);
                            }));
                finish(benchmark::RegisterBenchmark(
                        (base + "memcpy").c_str(),
                        [w, blocks, c](benchmark::State &st) {
                            bm_transpose(st, w, blocks, c, tr_impl::copy,
                                         selgraph::cpu_isa::isa_all);
                        }));
            }
}

} // namespace sgbench
