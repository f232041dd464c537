// Peer (d): oneDNN 2.6 binary primitives composed into Select. 2.6 has no
// binary_select (dnnl.hpp lists add, mul, max, min, div, sub, ge, gt, le,
// lt, eq, ne), so with cond_f = the cond as 0.0/1.0 in the source type
// (converted once, outside the timed region, as a framework keeping float
// masks would):
//
//   plan A (src_0 not broadcast; S1..S7): one primitive, one pass,
//     dst = binary_sub(src_0, src_1) -> post-op binary_mul(cond_f)
//                                    -> post-op binary_add(src_1)
//         = src_1 + cond_f * (src_0 - src_1)
//   plan C (src_0 broadcast, cond not; S8): oneDNN 2.6 wants the first
//     source of a binary to have dst's shape, so two primitives through a
//     dst-sized temporary t:
//     t   = binary_mul(cond_f, src_0)
//     dst = binary_mul(cond_f, src_1) -> post-op binary_sub(t)
//           -> post-op eltwise_linear(alpha = -1) -> post-op binary_add(src_1)
//         = src_1 + (cond_f * src_0 - cond_f * src_1)
//
// Post-ops compute in f32 whatever the type. The formulations are exact only
// when src_0 - src_1 is (Sterbenz: src_1 / 2 <= src_0 <= 2 src_1), which the
// suite's data in [1, 2) guarantees; for general finite inputs they may be
// off by rounding, and infinities or NaNs in the unselected source leak into
// dst. The check after the first run confirms bit-exact results here.
//
// oneDNN 2.6's x64 binary post-op injector supports only some broadcast
// shapes (per_oc: dim 1 of dst; scalar; full): a [1, inner] row is per_oc of
// the 2-D view [rows, inner], a [rows, 1] column is per_oc of the 3-D view
// [1, rows, inner]. Each primitive is created in the view whose
// implementation is not a reference one.
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_suite.hpp"

namespace sgbench {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;

// A post-op: a binary one with its second source, or eltwise_linear(-1).
struct post_op {
    algorithm alg;
    role r;      ///< binary: the post-op source's role
    void *data;  ///< binary: its data
    bool negate; ///< eltwise_linear(alpha = -1, beta = 0)
};

struct operand_ref {
    role r;
    void *data;
};

class onednn_runner : public runner {
public:
    explicit onednn_runner(case_data &d)
        : d_(d)
        , eng_(dnnl::engine::kind::cpu, 0)
        , strm_(eng_) {
        dt_ = d.type == dtype::f32    ? memory::data_type::f32
              : d.type == dtype::bf16 ? memory::data_type::bf16
                                      : memory::data_type::f16;
    }

    // Adds dst_ptr = alg(src0, src1) -> post-ops; false if oneDNN has no
    // implementation.
    bool add(algorithm alg, operand_ref s0, operand_ref s1, void *dst_ptr,
             const std::vector<post_op> &pos, const std::string &name) {
        for (int view = 0; view < 2; ++view) {
            try {
                dnnl::post_ops po;
                for (const post_op &x : pos) {
                    if (x.negate)
                        po.append_eltwise(1.f, algorithm::eltwise_linear, -1.f,
                                          0.f);
                    else
                        po.append_binary(x.alg, md(x.r, view));
                }
                dnnl::primitive_attr attr;
                attr.set_post_ops(po);
                const dnnl::binary::desc bd(alg, md(s0.r, view), md(s1.r, view),
                                            md(role::full, view));
                const dnnl::binary::primitive_desc pd(bd, attr, eng_);
                const std::string impl = pd.impl_info_str();
                if (impl.rfind("ref", 0) == 0 && view == 0)
                    continue; // try the other view
                step s { dnnl::binary(pd),
                         {},
                         name + ":" + impl
                                 + (view == 0 ? " [RxN]" : " [1xRxN]") };
                s.args[DNNL_ARG_SRC_0] = mem(s0.r, view, s0.data);
                s.args[DNNL_ARG_SRC_1] = mem(s1.r, view, s1.data);
                s.args[DNNL_ARG_DST] = mem(role::full, view, dst_ptr);
                for (size_t i = 0; i < pos.size(); ++i)
                    if (!pos[i].negate)
                        s.args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(
                                       static_cast<int>(i))
                               | DNNL_ARG_SRC_1] =
                                mem(pos[i].r, view, pos[i].data);
                steps_.push_back(std::move(s));
                return true;
            } catch (const dnnl::error &) {
                if (view == 1)
                    return false;
            }
        }
        return false;
    }

    void run() override {
        for (auto &s : steps_)
            s.prim.execute(strm_, s.args);
        strm_.wait();
    }

    std::string label() const override {
        std::string l;
        for (const auto &s : steps_)
            l += (l.empty() ? "" : " ; ") + s.what;
        return l;
    }

private:
    struct step {
        dnnl::primitive prim;
        std::unordered_map<int, memory> args;
        std::string what;
    };

    memory::dims dims(role r, int view) const {
        const int64_t R = d_.p.rows, n = d_.p.inner;
        memory::dims d;
        switch (r) {
            case role::full: d = { R, n }; break;
            case role::row: d = { 1, n }; break;
            case role::col: d = { R, 1 }; break;
            default: d = { 1, 1 }; break;
        }
        if (view == 1)
            d.insert(d.begin(), 1);
        return d;
    }
    memory::desc md(role r, int view) const {
        return memory::desc(dims(r, view), dt_, view == 0 ? tag::ab : tag::abc);
    }
    memory mem(role r, int view, void *data) const {
        return memory(md(r, view), eng_, data);
    }

    case_data &d_;
    dnnl::engine eng_;
    dnnl::stream strm_;
    memory::data_type dt_;
    std::vector<step> steps_;
};

} // namespace

std::unique_ptr<runner> make_onednn(case_data &d, std::string &why) {
    why.clear();
    if (d.type == dtype::f64 || d.type == dtype::s8) {
        // The binary formulation (src_1 + cond * (src_0 - src_1)) is exact
        // only for the suite's floating-point data; oneDNN 2.6 has no f64.
        why = std::string("oneDNN 2.6 binary: no exact Select formulation for ")
              + dtype_name(d.type);
        return nullptr;
    }
    const problem2d &p = d.p;
    auto r = std::make_unique<onednn_runner>(d);
    void *cond_f = d.get_cond_f();
    void *src0 = d.src0.get();
    void *src1 = d.src1.get();
    void *dst = d.dst.get();
    const role rc = p.roles[op_cond], ra = p.roles[op_src0],
               rb = p.roles[op_src1];
    bool ok = false;
    if (ra == role::full) {
        // plan A
        ok = r->add(algorithm::binary_sub, { ra, src0 }, { rb, src1 }, dst,
                    { { algorithm::binary_mul, rc, cond_f, false },
                      { algorithm::binary_add, rb, src1, false } },
                    "sub+po(mul,add)");
    } else if (rc == role::full) {
        // plan C
        void *t = d.get_scratch();
        ok = r->add(algorithm::binary_mul, { rc, cond_f }, { ra, src0 }, t, {},
                    "mul")
             && r->add(algorithm::binary_mul, { rc, cond_f }, { rb, src1 }, dst,
                       { { algorithm::binary_sub, role::full, t, false },
                         { algorithm::binary_add, role::full, nullptr, true },
                         { algorithm::binary_add, rb, src1, false } },
                       "mul+po(sub,linear,add)");
    } else {
        why = "no oneDNN formulation when neither src_0 nor cond has dst's "
              "shape";
        return nullptr;
    }
    if (!ok) {
        why = std::string("oneDNN ") + std::to_string(dnnl_version()->major)
              + "." + std::to_string(dnnl_version()->minor)
              + " has no binary implementation for " + dtype_name(d.type)
              + " on this CPU";
        return nullptr;
    }
    return r;
}

} // namespace sgbench
