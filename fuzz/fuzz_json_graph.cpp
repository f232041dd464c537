// libFuzzer target: the JSON graph loader. Any input either loads or throws
// selgraph::error; a graph that loads writes out and loads back to the same
// text, and builds through the public API (or throws selgraph::error).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/json_graph.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    selgraph::impl::json_graph g;
    try {
        g = selgraph::impl::parse_json_graph(text);
    } catch (const selgraph::error &) {
        return 0;
    }
    const std::string once = selgraph::impl::write_json_graph(g);
    std::string twice;
    try {
        twice = selgraph::impl::write_json_graph(
                selgraph::impl::parse_json_graph(once));
    } catch (const selgraph::error &e) {
        std::fprintf(stderr, "a written graph does not load: %s\n", e.what());
        std::abort();
    }
    if (once != twice) {
        std::fprintf(stderr, "write -> load -> write differs\n");
        std::abort();
    }
    try {
        selgraph::graph sg(selgraph::engine::kind::cpu);
        for (const auto &o : g.ops)
            sg.add_op(selgraph::impl::make_op(o));
        sg.finalize();
        for (const auto &p : sg.get_partitions())
            (void)p.is_supported();
    } catch (const selgraph::error &) {
    }
    return 0;
}
