// Uses an installed selgraph (find_package(selgraph CONFIG)): one Select
// with a broadcast src_1, checked element by element. Returns nonzero on a
// mismatch or an error.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <selgraph/selgraph.hpp>

int main() {
    using lt = selgraph::logical_tensor;
    using dt = lt::data_type;
    using layout = lt::layout_type;
    try {
        const lt cond(0, dt::boolean, { 4, 33 }, layout::strided);
        const lt src_0(1, dt::f32, { 4, 33 }, layout::strided);
        // lt::dims, not a bare { 33 }: a one-element braced list would pick the
        // (id, type, ndims, layout) constructor, as in oneDNN.
        const lt src_1(2, dt::f32, lt::dims { 33 }, layout::strided);
        const lt dst(3, dt::f32, { 4, 33 }, layout::strided);

        selgraph::op sel(0, selgraph::op::kind::Select, { cond, src_0, src_1 },
                         { dst });
        selgraph::graph g(selgraph::engine::kind::cpu);
        g.add_op(sel);
        g.finalize();
        auto parts = g.get_partitions();
        if (parts.size() != 1 || !parts[0].is_supported()) {
            std::fprintf(stderr, "consumer: no supported partition\n");
            return 1;
        }
        selgraph::engine eng(selgraph::engine::kind::cpu, 0);
        selgraph::stream strm(eng);
        auto cp = parts[0].compile({ cond, src_0, src_1 }, { dst }, eng);

        std::vector<uint8_t> c(4 * 33);
        std::vector<float> a(4 * 33), b(33), d(4 * 33, 0.f);
        for (size_t i = 0; i < c.size(); ++i) {
            c[i] = static_cast<uint8_t>((i * 7) % 3 == 0);
            a[i] = static_cast<float>(i);
        }
        for (size_t j = 0; j < b.size(); ++j)
            b[j] = -1.f - static_cast<float>(j);
        selgraph::tensor tc(cond, eng, c.data()), ta(src_0, eng, a.data()),
                tb(src_1, eng, b.data()), td(dst, eng, d.data());
        cp.execute(strm, { tc, ta, tb }, { td });
        strm.wait();

        int bad = 0;
        for (size_t i = 0; i < d.size(); ++i) {
            const float want = c[i] ? a[i] : b[i % 33];
            if (d[i] != want) {
                if (bad < 5)
                    std::fprintf(stderr, "consumer: dst[%zu] = %g, want %g\n",
                                 i, d[i], want);
                ++bad;
            }
        }
        std::printf("consumer: %s (%zu elements, %d mismatches)\n",
                    bad ? "FAILED" : "ok", d.size(), bad);
        return bad ? 1 : 0;
    } catch (const selgraph::error &e) {
        std::fprintf(stderr, "consumer: selgraph error (%s): %s\n",
                     selgraph::status2str(e.status), e.what());
        return 1;
    }
}
