// Layout cases L1..L32: Select with operands in channels-last, permuted or
// transposed layouts (L9 and L10: shapes whose rows are not multiples of a
// vector; L11 and L12: lines 4 bytes short of 8 KiB, read and written; L13:
// rows too wide for panels of 128 rows; L14: L9's scores written
// transposed; L15: the same shapes with every input full, so that dst is
// the transposed operand, in lines of 788 or 394 bytes; L16: three-channel
// images, channels-last inputs with a per-channel cond and an NCHW dst, so
// that the tiles' rows are 3 elements; L17: three dim orders, so that cond
// is staged and src_0 then transposed; L18: twelve channels, where the
// dst transpose's calls have fewer rows than a register tile of bytes and
// of AVX2's words; L19: L16's images the other way, NCHW inputs into an
// NHWC dst, so that the tiles hold 3 rows; L20: L12 with dst rows whole
// lines and a multiple of 4 KiB apart, which share one L1 set; L21: padded
// rows shared by every operand, rows of 197 elements 200 apart, so that
// no two rows fold into one and every row ends off a vector; L22: src_0
// with every dim reversed, whose lines of H x W come in pieces of W and whose
// tile dim N continues into C: rows in groups of N; L23, in s8 only: a
// transposed dst whose rows are never whole cache lines, so that the dst
// transposes join each row's pieces through a carry; L24: L8's scores with
// every operand full and dst written with its last two dims swapped, dst
// lines 1 KiB or 512 bytes apart; L25: attention heads [B, H, S, D] written
// to a dst stored [B, S, H, D], rows of D that no order transposes; L26:
// the same with src_0 so stored; L27: RGB images channels-last with each
// pixel's 3 channels padded to 4 in every operand, rows of 3 elements 4
// apart; L28: L27 with src_0 stored NCHW, transposed against the rest, so
// that the tiles' rows of 3 lie 4 apart; L29: every operand channels-last,
// src_0 every other channel of a larger tensor (a slice with a step, which
// no kernel covers: the reference kernel runs it); L30: RGB images
// channels-last under a per-pixel cond, one byte per row of 3 elements;
// L31: the same images under a per-pixel src_1, one element per row;
// L32: L28's mirror, NCHW inputs into a dst whose pixels of 3 channels are
// padded to 4, so that dst's transposes store rows of 3 elements 4 apart;
// each measured in the same run as
//
//   <case>/<type>/t<threads>/selgraph_<isa>   the case's own strides
//   <case>/<type>/t<threads>/dense_<isa>      the same shapes, row-major
//   <case>/<type>/t<threads>/loop_nd          a plain OpenMP loop over the
//                                             case's own strides
//   <case>/<type>/t<threads>/reorder_onednn   where one operand's layout
//                                             disagrees with the others':
//                                             oneDNN's reorder of that
//                                             operand alone, between its
//                                             layout and row-major
//
// so that report.py can give each layout's GB/s as a ratio to the dense case
// of the same shape and to the plain loop, and to what a oneDNN user would
// run in its place: a reorder into the common layout, then the dense Select.
// Bytes count every operand as stored (a broadcast operand once) plus dst,
// as for the suite; reorder_onednn counts the case's bytes too, so that its
// GB/s ratio to another is a ratio of times.
#include <cstring>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#include <unistd.h>

#include "bench_harness.hpp"
#include "bench_selgraph.hpp"
#include "bench_suite.hpp"

namespace sgbench {

namespace {

using dims_t = std::vector<int64_t>;

struct layout_case {
    std::string id, what;
    dims_t dims[4];     ///< cond, src_0, src_1, dst
    dims_t order[4];    ///< memory order, outermost first; empty: row-major
    bool dense = false; ///< every operand row-major (the reference case)
    /// The one operand whose layout disagrees with the others' (-1: none).
    int odd = -1;
    /// Elements of padding after each line of every operand's innermost
    /// dim in memory (where the operand is not broadcast along it).
    int64_t pad = 0;
    /// The element types it runs in.
    std::vector<dtype> types = { dtype::f32, dtype::bf16 };
    /// Elements between neighbours of the odd operand's innermost dim in
    /// memory, a slice with a step (1: none).
    int64_t step = 1;
};

// NCHW dims stored channels-last: N, H, W, C from outermost.
const dims_t nhwc = { 0, 2, 3, 1 };

// `scale` multiplies the outermost dim of the operands that are not
// broadcast along it: N of the activations, the rows of the [2048, 2048]
// matrices, the batch of the scores.
std::vector<layout_case> layout_cases(int64_t scale) {
    const dims_t act = { 16 * scale, 64, 56, 56 }, chan = { 1, 64, 1, 1 };
    const dims_t sq = { 2048 * scale, 2048 };
    const dims_t att = { 4 * scale, 16, 256, 256 }, mask = { 1, 1, 256, 256 };
    const dims_t vit = { 32 * scale, 12, 197, 197 }, vmask = { 1, 1, 197, 197 };
    const dims_t late = { 32 * scale, 512, 7, 7 };
    const dims_t odd = { 2047 * scale, 2047 };
    const dims_t stem = { 8 * scale, 64, 112, 112 };
    const dims_t rgb = { 16 * scale, 3, 224, 224 }, rgb_c = { 1, 3, 1, 1 };
    const dims_t rgb_px = { 16 * scale, 1, 224, 224 };
    const dims_t few = { 16 * scale, 12, 112, 112 };
    // dst rows 4001 * scale bytes apart in s8: never whole cache lines.
    const dims_t bytes_t = { 4001 * scale, 4096 };
    // Attention heads [B, H, S, D].
    const dims_t heads = { 8 * scale, 16, 512, 64 };
    return {
        { "L1",
          "all NHWC",
          { act, act, act, act },
          { nhwc, nhwc, nhwc, nhwc } },
        { "L2",
          "NHWC data, per-channel cond",
          { chan, act, act, act },
          { {}, nhwc, nhwc, nhwc } },
        { "L3",
          "NHWC data, per-channel src_1",
          { act, act, chan, act },
          { nhwc, nhwc, {}, nhwc } },
        { "L4",
          "src_0 NHWC, rest NCHW",
          { act, act, act, act },
          { {}, nhwc, {}, {} },
          false,
          op_src0 },
        { "L5",
          "dst NHWC, rest NCHW",
          { act, act, act, act },
          { {}, {}, {}, nhwc },
          false,
          op_dst },
        { "L6",
          "[2048,2048] src_0 transposed",
          { sq, sq, sq, sq },
          { {}, { 1, 0 }, {}, {} },
          false,
          op_src0 },
        { "L7",
          "[2048,2048] cond transposed",
          { sq, sq, sq, sq },
          { { 1, 0 }, {}, {}, {} },
          false,
          op_cond },
        { "L8",
          "scores [4,16,256,256] last two dims swapped, mask, 0-D src_1",
          { mask, att, {}, att },
          { {}, { 0, 1, 3, 2 }, {}, {} },
          false,
          op_src0 },
        { "L9",
          "ViT scores [32,12,197,197] last two dims swapped, mask, 0-D src_1",
          { vmask, vit, {}, vit },
          { {}, { 0, 1, 3, 2 }, {}, {} },
          false,
          op_src0 },
        { "L10",
          "[32,512,7,7] src_0 NHWC, rest NCHW",
          { late, late, late, late },
          { {}, nhwc, {}, {} },
          false,
          op_src0 },
        { "L11",
          "[2047,2047] src_0 transposed",
          { odd, odd, odd, odd },
          { {}, { 1, 0 }, {}, {} },
          false,
          op_src0 },
        { "L12",
          "[2047,2047] dst transposed",
          { odd, odd, odd, odd },
          { {}, {}, {}, { 1, 0 } },
          false,
          op_dst },
        { "L13",
          "[8,64,112,112] dst NHWC, rest NCHW",
          { stem, stem, stem, stem },
          { {}, {}, {}, nhwc },
          false,
          op_dst },
        { "L14",
          "ViT scores [32,12,197,197] mask, 0-D src_1, dst last two dims "
          "swapped",
          { vmask, vit, {}, vit },
          { {}, {}, {}, { 0, 1, 3, 2 } },
          false,
          op_dst },
        { "L15",
          "[32,12,197,197] dst last two dims swapped, the rest row-major",
          { vit, vit, vit, vit },
          { {}, {}, {}, { 0, 1, 3, 2 } },
          false,
          op_dst },
        { "L16",
          "[16,3,224,224] NHWC inputs, per-channel cond, dst NCHW",
          { rgb_c, rgb, rgb, rgb },
          { {}, nhwc, nhwc, {} },
          false,
          op_dst },
        { "L17",
          "cond NHWC, src_0 H and W swapped, src_1 and dst NCHW",
          { act, act, act, act },
          { nhwc, { 0, 1, 3, 2 }, {}, {} } },
        { "L18",
          "[16,12,112,112] NHWC inputs, dst NCHW",
          { few, few, few, few },
          { nhwc, nhwc, nhwc, {} },
          false,
          op_dst },
        { "L19",
          "[16,3,224,224] NCHW inputs, dst NHWC",
          { rgb, rgb, rgb, rgb },
          { {}, {}, {}, nhwc },
          false,
          op_dst },
        { "L20",
          "[2048,2048] dst transposed",
          { sq, sq, sq, sq },
          { {}, {}, {}, { 1, 0 } },
          false,
          op_dst },
        { "L21",
          "[32,12,197,197] rows padded to 200, all operands",
          { vit, vit, vit, vit },
          { {}, {}, {}, {} },
          false,
          -1,
          3 },
        { "L22",
          "[16,64,56,56] src_0 with every dim reversed, rest NCHW",
          { act, act, act, act },
          { {}, { 3, 2, 1, 0 }, {}, {} },
          false,
          op_src0 },
        { "L23",
          "[4001,4096] s8 dst transposed, rows 4001 bytes apart",
          { bytes_t, bytes_t, bytes_t, bytes_t },
          { {}, {}, {}, { 1, 0 } },
          false,
          op_dst,
          0,
          { dtype::s8 } },
        { "L24",
          "scores [4,16,256,256] all full, dst last two dims swapped",
          { att, att, att, att },
          { {}, {}, {}, { 0, 1, 3, 2 } },
          false,
          op_dst },
        { "L25",
          "[8,16,512,64] dst with H and S swapped ([B,S,H,D]), the rest "
          "row-major",
          { heads, heads, heads, heads },
          { {}, {}, {}, { 0, 2, 1, 3 } },
          false,
          op_dst },
        { "L26",
          "[8,16,512,64] src_0 with H and S swapped, the rest row-major",
          { heads, heads, heads, heads },
          { {}, { 0, 2, 1, 3 }, {}, {} },
          false,
          op_src0 },
        { "L27",
          "[16,3,224,224] all NHWC, the 3 channels padded to 4",
          { rgb, rgb, rgb, rgb },
          { nhwc, nhwc, nhwc, nhwc },
          false,
          -1,
          1,
          { dtype::f32, dtype::bf16, dtype::s8 } },
        { "L28",
          "[16,3,224,224] NHWC with the 3 channels padded to 4, src_0 NCHW "
          "(its rows of W padded to 225)",
          { rgb, rgb, rgb, rgb },
          { nhwc, {}, nhwc, nhwc },
          false,
          -1,
          1,
          { dtype::f32, dtype::bf16, dtype::s8 } },
        { "L29",
          "[16,64,56,56] all NHWC, src_0 every other channel of 128",
          { act, act, act, act },
          { nhwc, nhwc, nhwc, nhwc },
          false,
          op_src0,
          0,
          { dtype::f32, dtype::bf16 },
          2 },
        { "L30",
          "[16,3,224,224] all NHWC, per-pixel cond [16,1,224,224]",
          { rgb_px, rgb, rgb, rgb },
          { nhwc, nhwc, nhwc, nhwc },
          false,
          -1,
          0,
          { dtype::f32, dtype::bf16, dtype::s8 } },
        { "L31",
          "[16,3,224,224] all NHWC, per-pixel src_1 [16,1,224,224]",
          { rgb, rgb, rgb_px, rgb },
          { nhwc, nhwc, nhwc, nhwc },
          false,
          -1,
          0,
          { dtype::f32, dtype::bf16, dtype::s8 } },
        { "L32",
          "[16,3,224,224] NCHW inputs (rows of W padded to 225), dst NHWC "
          "with the 3 channels padded to 4",
          { rgb, rgb, rgb, rgb },
          { {}, {}, {}, nhwc },
          false,
          -1,
          1,
          { dtype::f32, dtype::bf16, dtype::s8 } },
    };
}

/// Element strides of dims `d` stored in `order` (outermost first; empty:
/// row-major), each line of the innermost dim followed by `pad` elements,
/// its elements `step` apart.
dims_t strides_of(const dims_t &d, const dims_t &order, int64_t pad = 0,
                  int64_t step = 1) {
    dims_t s(d.size());
    if (d.empty())
        return s;
    dims_t o = order;
    if (o.empty())
        for (size_t i = 0; i < d.size(); ++i)
            o.push_back(static_cast<int64_t>(i));
    int64_t acc = step;
    for (size_t k = o.size(); k-- > 0;) {
        const auto i = static_cast<size_t>(o[k]);
        s[i] = acc;
        acc *= d[i] + (k + 1 == o.size() && d[i] > 1 ? pad : 0);
    }
    return s;
}

/// Elements from the first to one past the last of dims `d` at strides
/// `s` (0 for an empty tensor).
int64_t extent(const dims_t &d, const dims_t &s) {
    int64_t last = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        if (d[i] == 0)
            return 0;
        last += (d[i] - 1) * s[i];
    }
    return last + 1;
}

int64_t product(const dims_t &d) {
    int64_t n = 1;
    for (int64_t x : d)
        n *= x;
    return n;
}

/// The tensors of one (case, type, dense or not), and the N-d problem with
/// operands right-aligned to dst (stride 0 where broadcast).
struct layout_data {
    int nd = 0, w = 4;
    int64_t dims[8] = {};
    int64_t st[4][8] = {}; // element strides, 0 where broadcast
    dims_t strides[4];     // per operand, its own dims
    buffer buf[4];
    size_t held = 0;           // bytes of buf
    size_t dst_bytes = 0;      // bytes of dst's span
    std::vector<uint8_t> want; // dst as the oracle writes it

    layout_data(const layout_case &lc, dtype t, bool dense)
        : w(dtype_size(t)) {
        const dims_t &dd = lc.dims[op_dst];
        nd = static_cast<int>(dd.size());
        for (int i = 0; i < nd; ++i)
            dims[i] = dd[static_cast<size_t>(i)];
        std::mt19937_64 rng(20261123);
        for (int op = 0; op < 4; ++op) {
            const dims_t &d = lc.dims[op];
            strides[op] = dense ? strides_of(d, dims_t())
                                : strides_of(d, lc.order[op], lc.pad,
                                             op == lc.odd ? lc.step : 1);
            loop_nd_strides(nd, d, strides[op], st[op]);
            const int ew = op == op_cond ? 1 : w;
            const auto bytes = static_cast<size_t>(extent(d, strides[op]) * ew);
            buf[op] = buffer(bytes);
            held += bytes;
            if (op == op_dst)
                dst_bytes = bytes;
            auto *p = buf[op].as<uint8_t>();
            fill_random_bytes(p, bytes, op == op_cond, rng);
        }
        // Every byte of dst's span, the gaps between padded lines too, as
        // a run leaves them: set to 0xFF before it, written by none.
        want.assign(dst_bytes, 0xFF);
        run_loop(want.data(), 1);
    }

    /// Bytes it holds: the operands and the oracle's dst.
    size_t held_bytes() const { return held + want.size(); }

    operands ops() const {
        return { buf[op_cond].as<uint8_t>(), buf[op_src0].get(),
                 buf[op_src1].get(), buf[op_dst].get() };
    }

    int64_t bytes(const layout_case &lc) const {
        return product(lc.dims[op_cond])
               + w
                         * (product(lc.dims[op_src0])
                            + product(lc.dims[op_src1])
                            + product(lc.dims[op_dst]));
    }

    /// The plain loop (also the oracle, on one thread).
    void run_loop(void *dst, int nthreads) const {
        operands o = ops();
        o.dst = dst;
        loop_nd(nd, dims, st, w, o, nthreads);
    }

    bool check(std::string &why) const {
        if (std::memcmp(buf[op_dst].get(), want.data(), want.size()) == 0)
            return true;
        why = "dst differs from the oracle";
        return false;
    }
};

/// What the layout benchmarks keep from one run to the next: each case's
/// tensors and oneDNN's reorder of it, made on first use (the repetitions
/// of a run interleaved at random come back to every case). Kept while
/// they fit half the machine's memory; past it, the entries used longest
/// ago are freed and made again when next used: at --sg_layout_scale=8 the
/// cases together need more memory than a 24 GiB machine has.
class kept_objects {
public:
    /// The object under `key`, made by `make` (a std::shared_ptr<T>, T with
    /// held_bytes()) where there is none. Shared: an entry evicted while a
    /// benchmark still uses it lives until that benchmark lets it go.
    template <typename T, typename Make>
    std::shared_ptr<T> get(const std::string &key, Make make) {
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->key == key) {
                entries_.splice(entries_.begin(), entries_, it);
                return std::static_pointer_cast<T>(it->obj);
            }
        std::shared_ptr<T> obj = make();
        const size_t bytes = obj->held_bytes();
        while (!entries_.empty() && held_ + bytes > budget()) {
            held_ -= entries_.back().bytes;
            entries_.pop_back();
        }
        held_ += bytes;
        entries_.push_front({ key, obj, bytes });
        return obj;
    }

    static kept_objects &global() {
        static kept_objects k;
        return k;
    }

private:
    static size_t budget() {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page = sysconf(_SC_PAGE_SIZE);
        return pages > 0 && page > 0 ? static_cast<size_t>(pages)
                                               * static_cast<size_t>(page) / 2
                                     : size_t(8) << 30;
    }
    struct entry {
        std::string key;
        std::shared_ptr<void> obj;
        size_t bytes;
    };
    std::list<entry> entries_; // most recently used first
    size_t held_ = 0;
};

std::shared_ptr<layout_data> layout_data_for(const layout_case &lc, dtype t,
                                             bool dense) {
    return kept_objects::global().get<layout_data>(
            lc.id + dtype_name(t) + (dense ? "d" : ""),
            [&] { return std::make_shared<layout_data>(lc, t, dense); });
}

/// oneDNN's reorder of a case's odd operand between its own layout and
/// row-major (an input out of its layout, dst into it), on two buffers of
/// its own.
struct onednn_reorder {
    dnnl::engine eng { dnnl::engine::kind::cpu, 0 };
    dnnl::stream strm { eng };
    dnnl::memory from, to;
    dnnl::reorder prim;
    std::string impl;

    size_t bytes = 0; // of from and to

    size_t held_bytes() const { return bytes; }

    onednn_reorder(const layout_case &lc, dtype t) {
        using dt = dnnl::memory::data_type;
        const int op = lc.odd;
        const dims_t &d = lc.dims[op];
        const dt type = op == op_cond      ? dt::u8
                        : t == dtype::bf16 ? dt::bf16
                        : t == dtype::s8   ? dt::s8
                                           : dt::f32;
        const dnnl::memory::desc own(
                d, type, strides_of(d, lc.order[op], lc.pad, lc.step));
        const dnnl::memory::desc plain(d, type, strides_of(d, dims_t()));
        const bool input = op != op_dst;
        const dnnl::reorder::primitive_desc pd(eng, input ? own : plain, eng,
                                               input ? plain : own);
        from = dnnl::memory(pd.src_desc(), eng);
        to = dnnl::memory(pd.dst_desc(), eng);
        std::memset(from.get_data_handle(), 0x3c, pd.src_desc().get_size());
        std::memset(to.get_data_handle(), 0, pd.dst_desc().get_size());
        bytes = pd.src_desc().get_size() + pd.dst_desc().get_size();
        prim = dnnl::reorder(pd);
        impl = pd.impl_info_str();
    }
    void run() {
        prim.execute(strm, from, to);
        strm.wait();
    }
};

/// The reorder of `lc` in type `t` for `nthr` threads (the caller's OpenMP
/// thread count); null with `why` where oneDNN has none. One per thread
/// count: oneDNN 2.6's reorder fixes its thread count when the primitive is
/// created, so a primitive made under 2 threads ran on 2 in the 1-thread
/// benchmarks that reused it (and one made under 1, on 1 in the 2-thread
/// ones), whichever the random interleaving ran first.
std::shared_ptr<onednn_reorder> reorder_for(const layout_case &lc, dtype t,
                                            int nthr, std::string &why) {
    try {
        return kept_objects::global().get<onednn_reorder>(
                lc.id + dtype_name(t) + "r" + std::to_string(nthr),
                [&] { return std::make_shared<onednn_reorder>(lc, t); });
    } catch (const dnnl::error &e) {
        why = std::string("oneDNN reorder: ") + e.what();
        return nullptr;
    }
}

const char *operand_name(int op) {
    static const char *names[] = { "cond", "src_0", "src_1", "dst" };
    return names[op];
}

enum class layout_impl { selgraph, dense, loop, reorder };

void bm_layout(benchmark::State &st, const layout_case *lc, dtype t, int nthr,
               layout_impl kind, selgraph::cpu_isa isa) {
    omp_set_num_threads(nthr);
    const bool dense = kind == layout_impl::dense;
    const std::shared_ptr<layout_data> kept = layout_data_for(*lc, t, dense);
    layout_data &d = *kept;
    std::function<void()> fn;
    bool fresh = false;
    if (kind == layout_impl::reorder) {
        // Not a Select: no oracle to check; the case's bytes, so that GB/s
        // ratios are time ratios.
        std::string why;
        const std::shared_ptr<onednn_reorder> r =
                reorder_for(*lc, t, nthr, why);
        if (!r) {
            st.SkipWithError(why.c_str());
            return;
        }
        st.SetLabel(std::string("oneDNN reorder of ") + operand_name(lc->odd)
                    + " alone (" + r->impl + ")");
        fn = [r] { r->run(); };
        fn();
        time_loop(st, fn);
        set_counters(st, d.bytes(*lc), product(lc->dims[op_dst]), nthr);
        return;
    }
    if (kind == layout_impl::loop) {
        fn = [&d, nthr] { d.run_loop(d.buf[op_dst].get(), nthr); };
        st.SetLabel("plain OpenMP loop over the case's strides");
    } else {
        if (!cpu_runs(isa)) {
            st.SkipWithError("the CPU lacks this ISA");
            return;
        }
        const dims_t(&strides)[4] = d.strides;
        compiled_select &cs = compiled_for(
                lc->id + "/" + dtype_name(t) + "/t" + std::to_string(nthr)
                        + (dense ? "/dense_" : "/selgraph_")
                        + isa_short_name(isa),
                lc->dims, t, isa, &strides, fresh);
        cs.sg->bind(d.ops());
        fn = [&cs] { cs.sg->execute(cs.cp); };
        st.SetLabel(cs.sg->plan_label(isa));
    }
    std::memset(d.buf[op_dst].get(), 0xFF, d.want.size());
    fn();
    std::string why;
    if (!d.check(why)) {
        st.SkipWithError(why.c_str());
        return;
    }
    for (int i = 0; fresh && i < warmup_executes(); ++i)
        fn();
    time_loop(st, fn);
    set_counters(st, d.bytes(*lc), product(lc->dims[op_dst]), nthr);
}

} // namespace

void register_layouts(int scale) {
    const selgraph::cpu_isa isas[] = { selgraph::cpu_isa::avx512_core,
                                       selgraph::cpu_isa::avx2 };
    // Registered benchmarks keep pointers into it.
    static const std::vector<layout_case> cases = layout_cases(scale);
    for (const layout_case &lc : cases)
        for (dtype t : lc.types)
            for (int nthr : thread_counts()) {
                const std::string base = lc.id + "/" + dtype_name(t) + "/t"
                                         + std::to_string(nthr) + "/";
                for (auto isa : isas)
                    for (auto kind :
                         { layout_impl::selgraph, layout_impl::dense }) {
                        const std::string name =
                                base
                                + (kind == layout_impl::dense ? "dense_"
                                                              : "selgraph_")
                                + isa_short_name(isa);
                        finish(benchmark::RegisterBenchmark(
                                name.c_str(), [&lc, t, nthr, kind,
                                               isa](benchmark::State &st) {
                                    bm_layout(st, &lc, t, nthr, kind, isa);
                                }));
                    }
                finish(benchmark::RegisterBenchmark(
                        (base + "loop_nd").c_str(),
                        [&lc, t, nthr](benchmark::State &st) {
                            bm_layout(st, &lc, t, nthr, layout_impl::loop,
                                      selgraph::cpu_isa::isa_all);
                        }));
                if (lc.odd >= 0)
                    finish(benchmark::RegisterBenchmark(
                            (base + "reorder_onednn").c_str(),
                            [&lc, t, nthr](benchmark::State &st) {
                                bm_layout(st, &lc, t, nthr,
                                          layout_impl::reorder,
                                          selgraph::cpu_isa::isa_all);
                            }));
            }
}

} // namespace sgbench
