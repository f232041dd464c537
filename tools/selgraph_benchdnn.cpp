// selgraph_benchdnn: benchdnn's graph driver (--graph) for selgraph. Loads
// oneDNN graph JSON files, builds each graph through the public API, and
// compiles and runs every supported partition: in mode C it compares dst
// bit for bit with an independent reference, in mode P it times execute.
// docs/json.md describes the options and the output.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "selgraph/selgraph.hpp"
#include "src/common.hpp"
#include "src/json_graph.hpp"
#include "tools/select_reference.hpp"

namespace {

using selgraph::logical_tensor;
using dt = logical_tensor::data_type;
using lt_layout = logical_tensor::layout_type;
using lt_prop = logical_tensor::property_type;
using dims = logical_tensor::dims;

struct shape_override {
    dims shape;
    dims strides; // empty: dense
};

struct options {
    char mode = 'C';
    std::map<size_t, shape_override> in_shapes;
    std::string in_shapes_arg;
    bool dt_all_set = false;
    dt dt_all = dt::f32;
    std::map<size_t, dt> dt_ids;
    std::string dt_arg;
    long expected_n = -1;
};

struct counters {
    int tests = 0, passed = 0, skipped = 0, unimplemented = 0, invalid = 0,
        failed = 0;
};

bool parse_int(const std::string &s, int64_t &v) {
    if (s.empty())
        return false;
    char *end = nullptr;
    errno = 0;
    const long long x = std::strtoll(s.c_str(), &end, 10);
    if (errno || *end)
        return false;
    v = x;
    return true;
}

bool parse_dims(const std::string &s, dims &d) {
    d.clear();
    if (s == "-")
        return true; // rank 0
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, 'x')) {
        int64_t v;
        if (!parse_int(tok, v) || v < 0)
            return false;
        d.push_back(v);
    }
    return !d.empty() && d.size() <= logical_tensor::max_ndims;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> r;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, sep))
        r.push_back(tok);
    return r;
}

bool parse_in_shapes(const std::string &arg, options &o) {
    std::map<size_t, shape_override> m;
    for (const auto &item : split(arg, '+')) {
        const size_t colon = item.find(':');
        int64_t id;
        if (colon == std::string::npos || !parse_int(item.substr(0, colon), id)
            || id < 0)
            return false;
        std::string rest = item.substr(colon + 1);
        shape_override so;
        const size_t star = rest.find('*');
        if (!parse_dims(rest.substr(0, star), so.shape))
            return false;
        if (star != std::string::npos
            && (!parse_dims(rest.substr(star + 1), so.strides)
                || so.strides.size() != so.shape.size()))
            return false;
        m[static_cast<size_t>(id)] = so;
    }
    if (m.empty())
        return false;
    o.in_shapes = m;
    o.in_shapes_arg = arg;
    return true;
}

bool parse_dt(const std::string &arg, options &o) {
    dt d;
    if (arg.find(':') == std::string::npos) {
        if (arg != "f32" && arg != "bf16" && arg != "f16")
            return false;
        selgraph::impl::str2dtype(arg, d);
        o.dt_all_set = true;
        o.dt_all = d;
        o.dt_ids.clear();
        o.dt_arg = arg;
        return true;
    }
    std::map<size_t, dt> m;
    for (const auto &item : split(arg, '+')) {
        const size_t colon = item.find(':');
        int64_t id;
        if (colon == std::string::npos || !parse_int(item.substr(0, colon), id)
            || id < 0 || !selgraph::impl::str2dtype(item.substr(colon + 1), d)
            || d == dt::undef)
            return false;
        m[static_cast<size_t>(id)] = d;
    }
    o.dt_all_set = false;
    o.dt_ids = m;
    o.dt_arg = arg;
    return true;
}

std::string repro(const options &o, const std::string &file) {
    std::string r = "--graph --mode=";
    r += o.mode;
    if (!o.in_shapes_arg.empty())
        r += " --in-shapes=" + o.in_shapes_arg;
    if (!o.dt_arg.empty())
        r += " --dt=" + o.dt_arg;
    if (o.expected_n >= 0)
        r += " --expected-n-partitions=" + std::to_string(o.expected_n);
    return r + " --case=" + file;
}

// Fills with a fixed-seed xorshift stream: random bits for data, a mix of
// true and false (0 and 1) for cond.
struct filler {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    void bits(void *p, size_t n) {
        auto *b = static_cast<unsigned char *>(p);
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const uint64_t v = next();
            std::memcpy(b + i, &v, 8);
        }
        for (; i < n; ++i)
            b[i] = static_cast<unsigned char>(next());
    }
    void bools(void *p, size_t n) {
        auto *b = static_cast<unsigned char *>(p);
        for (size_t i = 0; i < n; ++i)
            b[i] = static_cast<unsigned char>(next() >> 63);
        if (n >= 2) { // both values present
            b[0] = 1;
            b[n - 1] = 0;
        }
    }
};

bool all_known(const logical_tensor &lt) {
    if (lt.get_ndims() < 0)
        return false;
    for (auto d : lt.get_dims())
        if (d < 0)
            return false;
    return true;
}

bool strides_known(const logical_tensor &lt) {
    if (lt.get_layout_type() != lt_layout::strided)
        return false;
    for (auto s : lt.get_strides())
        if (s < 0)
            return false;
    return true;
}

// The tensor as it is compiled: dense strided unless the file gives strides.
logical_tensor concrete(const logical_tensor &lt) {
    if (strides_known(lt))
        return lt;
    return logical_tensor(lt.get_id(), lt.get_data_type(), lt.get_dims(),
                          lt_layout::strided, lt.get_property_type());
}

size_t max_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return size_t(1) << 32;
    return static_cast<size_t>(pages) * static_cast<size_t>(page) / 2;
}

enum class result { passed, failed, skipped, unimplemented };

struct part_run {
    result res = result::passed;
    std::string reason;
};

// Compiles and runs one Select partition.
part_run run_select(const selgraph::partition &p,
                    const selgraph::impl::json_op &jo, const options &opt,
                    bool reshaped, selgraph::engine &eng,
                    selgraph::stream &strm) {
    part_run r;
    const auto ins = p.get_input_ports();
    const auto outs = p.get_output_ports();
    std::vector<logical_tensor> c_in;
    size_t in_bytes = 0;
    for (const auto &lt : ins) {
        if (!all_known(lt)) {
            r.res = result::failed;
            r.reason = "input logical tensor " + std::to_string(lt.get_id())
                       + " has unknown dims; give them with --in-shapes";
            return r;
        }
        c_in.push_back(concrete(lt));
        in_bytes += c_in.back().get_mem_size();
    }
    const logical_tensor &dl = outs.at(0);
    const logical_tensor c_out =
            (!reshaped && all_known(dl) && strides_known(dl))
                    ? dl
                    : logical_tensor(dl.get_id(), dl.get_data_type(),
                                     logical_tensor::unknown_ndims,
                                     lt_layout::any);
    selgraph::compiled_partition cp;
    try {
        cp = p.compile(c_in, { c_out }, eng);
    } catch (const selgraph::error &e) {
        r.res = e.status == selgraph::status::unimplemented
                        ? result::unimplemented
                        : result::failed;
        r.reason = std::string("compile: ") + e.what();
        return r;
    }
    const logical_tensor d = cp.query_logical_tensor(dl.get_id());
    const size_t dst_bytes = d.get_mem_size();
    if (in_bytes + 2 * dst_bytes > max_bytes()) {
        r.res = result::skipped;
        r.reason = "not enough memory: "
                   + std::to_string(in_bytes + 2 * dst_bytes) + " bytes needed";
        return r;
    }

    filler fill;
    std::vector<selgraph::tensor> t_in;
    std::vector<std::vector<unsigned char>> scalars;
    const void *ptr[3] = {};
    for (size_t i = 0; i < c_in.size(); ++i) {
        const logical_tensor &lt = c_in[i];
        const size_t bytes = lt.get_mem_size();
        if (lt.get_property_type() == lt_prop::host_scalar) {
            std::vector<unsigned char> v(bytes);
            fill.bits(v.data(), bytes);
            t_in.push_back(selgraph::tensor::make_scalar_tensor(lt, v.data()));
        } else {
            t_in.emplace_back(lt, eng); // the library allocates
            if (i == 0)
                fill.bools(t_in.back().get_data_handle(), bytes);
            else
                fill.bits(t_in.back().get_data_handle(), bytes);
        }
        ptr[i] = t_in.back().get_data_handle();
    }
    selgraph::tensor t_out(d, eng);
    std::memset(t_out.get_data_handle(), 0xa5, dst_bytes);

    try {
        cp.execute(strm, t_in, { t_out });
        strm.wait();
    } catch (const selgraph::error &e) {
        r.res = result::failed;
        r.reason = std::string("execute: ") + e.what();
        return r;
    }

    if (opt.mode == 'C') {
        std::string mode = "numpy";
        int64_t axis = -1;
        for (const auto &a : jo.attrs) {
            if (a.first == "auto_broadcast")
                if (auto s = std::get_if<std::string>(&a.second))
                    mode = *s;
            if (a.first == "axis")
                if (auto v = std::get_if<int64_t>(&a.second))
                    axis = *v;
        }
        const int nd = d.get_ndims();
        selgraph_tools::ref_operand ops[3];
        for (int i = 0; i < 3; ++i) {
            ops[i].shape = c_in[i].get_dims();
            ops[i].strides = c_in[i].get_strides();
            ops[i].offset = selgraph_tools::ref_offset(mode, axis, i == 1,
                                                       ops[i].shape, nd);
        }
        const size_t elem = selgraph::impl::dtype_size(d.get_data_type());
        std::vector<unsigned char> ref(dst_bytes, 0xa5);
        selgraph_tools::ref_select(d.get_dims(), d.get_strides(), ops, ptr,
                                   elem, ref.data());
        const auto *got =
                static_cast<const unsigned char *>(t_out.get_data_handle());
        for (size_t i = 0; i < dst_bytes; ++i)
            if (got[i] != ref[i]) {
                r.res = result::failed;
                r.reason = "dst differs from the reference at byte "
                           + std::to_string(i) + " (element "
                           + std::to_string(i / elem) + ")";
                return r;
            }
    } else {
        using clk = std::chrono::steady_clock;
        double best = 1e30, sum = 0;
        int n = 0;
        const auto start = clk::now();
        while (n < 1000
               && (n < 10
                   || std::chrono::duration<double>(clk::now() - start).count()
                              < 0.2)) {
            const auto t0 = clk::now();
            cp.execute(strm, t_in, { t_out });
            strm.wait();
            const double ms =
                    std::chrono::duration<double, std::milli>(clk::now() - t0)
                            .count();
            best = std::min(best, ms);
            sum += ms;
            ++n;
        }
        const double bytes = static_cast<double>(in_bytes + dst_bytes);
        std::printf("perf,partition %zu,Select op %zu,runs:%d,min(ms):%.6f,"
                    "avg(ms):%.6f,GB/s:%.3f\n",
                    p.get_id(), jo.id, n, best, sum / n,
                    best > 0 ? bytes / (best * 1e6) : 0.0);
    }
    return r;
}

const char *result2str(result r) {
    switch (r) {
        case result::passed: return "PASSED";
        case result::failed: return "FAILED";
        case result::skipped: return "SKIPPED";
        case result::unimplemented: return "UNIMPLEMENTED";
    }
    return "FAILED";
}

void print_case(int n, const char *res, const std::string &reason,
                const std::string &rep) {
    std::printf("%d:%s", n, res);
    if (!reason.empty())
        std::printf(" (%s)", reason.c_str());
    std::printf(" __REPRO: %s\n", rep.c_str());
    std::fflush(stdout);
}

void run_case(int n, const std::string &file, const options &opt,
              counters &cnt) {
    ++cnt.tests;
    const std::string rep = repro(opt, file);
    std::ifstream f(file, std::ios::binary);
    if (!f) {
        ++cnt.invalid;
        print_case(n, "INVALID_ARGUMENTS", "cannot read " + file, rep);
        return;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    selgraph::impl::json_graph g;
    try {
        g = selgraph::impl::parse_json_graph(ss.str());
    } catch (const selgraph::error &e) {
        ++cnt.invalid;
        print_case(n, "INVALID_ARGUMENTS", e.what(), rep);
        return;
    }

    // --in-shapes (graph inputs only) and --dt.
    for (const auto &s : opt.in_shapes) {
        bool is_input = false;
        for (size_t id : g.input_ports)
            is_input = is_input || id == s.first;
        if (!is_input) {
            ++cnt.invalid;
            print_case(n, "INVALID_ARGUMENTS",
                       "--in-shapes: logical tensor " + std::to_string(s.first)
                               + " is not an input port of the graph",
                       rep);
            return;
        }
    }
    bool reshaped = false;
    auto rewrite = [&](logical_tensor &lt) {
        dt type = lt.get_data_type();
        auto di = opt.dt_ids.find(lt.get_id());
        if (di != opt.dt_ids.end())
            type = di->second;
        else if (opt.dt_all_set
                 && (type == dt::f32 || type == dt::bf16 || type == dt::f16))
            type = opt.dt_all;
        auto si = opt.in_shapes.find(lt.get_id());
        if (si != opt.in_shapes.end()) {
            reshaped = true;
            const auto &so = si->second;
            lt = so.strides.empty()
                         ? logical_tensor(lt.get_id(), type, so.shape,
                                          lt_layout::strided,
                                          lt.get_property_type())
                         : logical_tensor(lt.get_id(), type, so.shape,
                                          so.strides, lt.get_property_type());
            return;
        }
        if (type == lt.get_data_type())
            return;
        if (lt.get_ndims() < 0)
            lt = logical_tensor(lt.get_id(), type, lt.get_layout_type());
        else if (strides_known(lt))
            lt = logical_tensor(lt.get_id(), type, lt.get_dims(),
                                lt.get_strides(), lt.get_property_type());
        else
            lt = logical_tensor(lt.get_id(), type, lt.get_dims(),
                                lt.get_layout_type(), lt.get_property_type());
    };
    for (auto &o : g.ops) {
        for (auto &lt : o.inputs)
            rewrite(lt);
        for (auto &lt : o.outputs)
            rewrite(lt);
    }

    selgraph::engine eng(selgraph::engine::kind::cpu, 0);
    selgraph::stream strm(eng);
    selgraph::graph sg(selgraph::engine::kind::cpu);
    std::map<size_t, const selgraph::impl::json_op *> by_id;
    std::vector<selgraph::partition> parts;
    try {
        for (const auto &o : g.ops) {
            sg.add_op(selgraph::impl::make_op(o));
            by_id[o.id] = &o;
        }
        sg.finalize();
        parts = sg.get_partitions();
    } catch (const selgraph::error &e) {
        ++cnt.invalid;
        print_case(n, "INVALID_ARGUMENTS", std::string("graph: ") + e.what(),
                   rep);
        return;
    }

    std::string plist = "partitions:";
    std::vector<std::string> unsupported_kinds;
    int n_supported = 0;
    for (const auto &p : parts) {
        plist += " " + std::to_string(p.get_id()) + "[";
        bool first = true;
        for (size_t oid : p.get_ops()) {
            const char *k = selgraph::op_kind2str(by_id.at(oid)->kind);
            plist += (first ? "" : ",") + std::string(k) + "#"
                     + std::to_string(oid);
            first = false;
            if (!p.is_supported())
                unsupported_kinds.push_back(k);
        }
        plist += p.is_supported() ? " supported]" : " unsupported]";
        n_supported += p.is_supported();
    }

    if (opt.expected_n >= 0
        && static_cast<long>(parts.size()) != opt.expected_n) {
        ++cnt.failed;
        print_case(n, "FAILED",
                   "expected " + std::to_string(opt.expected_n)
                           + " partitions, got " + std::to_string(parts.size())
                           + "; " + plist,
                   rep);
        return;
    }
    if (n_supported == 0) {
        std::string kinds;
        for (const auto &k : unsupported_kinds)
            kinds += (kinds.empty() ? "" : ",") + k;
        ++cnt.unimplemented;
        print_case(n, "UNIMPLEMENTED",
                   "no supported partition; unsupported op kinds: " + kinds
                           + "; " + plist,
                   rep);
        return;
    }

    result worst = result::passed;
    std::string reason;
    for (const auto &p : parts) {
        if (!p.is_supported())
            continue;
        const auto *jo = by_id.at(p.get_ops().at(0));
        part_run pr;
        try {
            pr = run_select(p, *jo, opt, reshaped, eng, strm);
        } catch (const selgraph::error &e) {
            pr.res = result::failed;
            pr.reason = e.what();
        } catch (const std::bad_alloc &) {
            pr.res = result::skipped;
            pr.reason = "not enough memory";
        }
        // failed > unimplemented > skipped > passed
        auto rank = [](result x) {
            return x == result::failed          ? 3
                   : x == result::unimplemented ? 2
                   : x == result::skipped       ? 1
                                                : 0;
        };
        if (rank(pr.res) > rank(worst)) {
            worst = pr.res;
            reason = "partition " + std::to_string(p.get_id()) + ": "
                     + pr.reason;
        }
    }
    switch (worst) {
        case result::passed: ++cnt.passed; break;
        case result::failed: ++cnt.failed; break;
        case result::skipped: ++cnt.skipped; break;
        case result::unimplemented: ++cnt.unimplemented; break;
    }
    print_case(n, result2str(worst),
               reason.empty() ? plist : reason + "; " + plist, rep);
}

void usage() {
    std::fprintf(stderr, "usage: selgraph_benchdnn --graph [--mode=C|P] "
                         "[--in-shapes=ID:SHAPE[*STRIDES][+...]] "
                         "[--dt=f32|bf16|f16|ID:DT[+...]] "
                         "[--expected-n-partitions=N] --case=FILE.json "
                         "[--case=...]\n");
}

} // namespace

int main(int argc, char **argv) {
    options opt;
    counters cnt;
    bool graph_driver = false;
    int n = 0;
    auto invalid = [&](const std::string &arg, const char *why) {
        std::printf("%d:INVALID_ARGUMENTS (%s: %s) __REPRO: %s\n", n++,
                    arg.c_str(), why, arg.c_str());
        ++cnt.tests;
        ++cnt.invalid;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&](const char *key, std::string &v) {
            const size_t k = std::strlen(key);
            if (a.compare(0, k, key) != 0)
                return false;
            v = a.substr(k);
            return true;
        };
        std::string v;
        if (a == "--graph") {
            graph_driver = true;
        } else if (a == "--help" || a == "-h") {
            usage();
            return 0;
        } else if (!graph_driver) {
            invalid(a, "the first option must be --graph");
        } else if (val("--mode=", v)) {
            if (v == "C" || v == "c" || v == "P" || v == "p")
                opt.mode = static_cast<char>(std::toupper(v[0]));
            else
                invalid(a, "mode is C or P");
        } else if (val("--in-shapes=", v)) {
            if (!parse_in_shapes(v, opt))
                invalid(a, "expected ID:SHAPE[*STRIDES][+...], SHAPE like "
                           "1x16x32x32 or - for 0-D");
        } else if (val("--dt=", v)) {
            if (!parse_dt(v, opt))
                invalid(a, "expected f32, bf16, f16 or ID:DT[+ID:DT...]");
        } else if (val("--expected-n-partitions=", v)) {
            int64_t x;
            if (parse_int(v, x) && x >= 0)
                opt.expected_n = static_cast<long>(x);
            else
                invalid(a, "expected a non-negative number");
        } else if (val("--case=", v)) {
            run_case(n++, v, opt, cnt);
        } else {
            invalid(a, "unknown option");
        }
    }
    if (!graph_driver) {
        usage();
        if (argc <= 1)
            ++cnt.invalid;
    }
    std::printf("tests:%d passed:%d skipped:%d mistrusted:0 unimplemented:%d "
                "invalid_arguments:%d failed:%d listed:0\n",
                cnt.tests, cnt.passed, cnt.skipped, cnt.unimplemented,
                cnt.invalid, cnt.failed);
    return cnt.failed || cnt.invalid ? 1 : 0;
}
