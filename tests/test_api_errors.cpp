// compiled_partition::execute validation: every rejected execute throws
// invalid_arguments naming the op and the port, and leaves dst untouched.
#include "tests/api_test_utils.hpp"

using namespace sgt;
using selgraph::tensor;

namespace {

constexpr size_t op_id = 42;
constexpr int64_t rows = 4, cols = 33;

class ApiExecuteErrors : public ::testing::Test {
protected:
    lt c { 10, dt::boolean, dims { rows, cols }, lyt::strided };
    lt a { 11, dt::f32, dims { rows, cols }, lyt::strided };
    lt b { 12, dt::f32, dims { rows, cols }, lyt::strided };
    lt d { 13, dt::f32, dims { rows, cols }, lyt::strided };
    selgraph::compiled_partition cp;
    std::vector<uint8_t> cond = std::vector<uint8_t>(rows * cols, 1);
    std::vector<float> src0 = std::vector<float>(rows * cols, 1.f);
    std::vector<float> src1 = std::vector<float>(rows * cols, 2.f);
    std::vector<uint32_t> dst;

    static constexpr uint32_t sentinel = 0xDEADBEEFu;

    void SetUp() override {
        cp = compile_select(c, a, b, d, op_id);
        dst.assign(rows * cols, sentinel);
    }
    tensor tc() { return tensor(c, cpu_engine(), cond.data()); }
    tensor ta() { return tensor(a, cpu_engine(), src0.data()); }
    tensor tb() { return tensor(b, cpu_engine(), src1.data()); }
    tensor td() { return tensor(d, cpu_engine(), dst.data()); }

    void run(const std::vector<tensor> &in, const std::vector<tensor> &out) {
        cp.execute(cpu_stream(), in, out);
    }
    ::testing::AssertionResult dst_untouched() const {
        for (size_t i = 0; i < dst.size(); ++i)
            if (dst[i] != sentinel)
                return ::testing::AssertionFailure()
                       << "dst[" << i << "] was written: 0x" << std::hex
                       << dst[i];
        return ::testing::AssertionSuccess();
    }
};

} // namespace

TEST_F(ApiExecuteErrors, ValidExecuteWorks) {
    // The fixture itself is sound: the same tensors execute fine.
    run({ tc(), ta(), tb() }, { td() });
    for (size_t i = 0; i < dst.size(); ++i) {
        float f;
        std::memcpy(&f, &dst[i], 4);
        ASSERT_EQ(f, 1.f) << i;
    }
    // Tensors are matched by id, not by position.
    dst.assign(rows * cols, sentinel);
    cond.assign(rows * cols, 0);
    run({ tb(), tc(), ta() }, { td() });
    for (size_t i = 0; i < dst.size(); ++i) {
        float f;
        std::memcpy(&f, &dst[i], 4);
        ASSERT_EQ(f, 2.f) << i;
    }
}

TEST_F(ApiExecuteErrors, WrongTensorCount) {
    EXPECT_SG_ERROR(run({ tc(), ta() }, { td() }), status::invalid_arguments,
                    "Select op 42", "3 input", "got 2");
    EXPECT_SG_ERROR(run({ tc(), ta(), tb(), tb() }, { td() }),
                    status::invalid_arguments, "Select op 42", "got 4");
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() }, {}), status::invalid_arguments,
                    "Select op 42", "1 output");
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() }, { td(), td() }),
                    status::invalid_arguments, "Select op 42", "1 output");
    EXPECT_SG_ERROR(run({}, {}), status::invalid_arguments, "Select op 42");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, UnknownId) {
    const lt other(99, dt::f32, dims { rows, cols }, lyt::strided);
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tensor(other, cpu_engine(), src1.data()) },
                { td() }),
            status::invalid_arguments, "Select op 42", "99", "input");
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() },
                        { tensor(other, cpu_engine(), dst.data()) }),
                    status::invalid_arguments, "Select op 42", "99", "output");
    // An input id as the output, the output id as an input.
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tb() },
                { tensor(lt(11, dt::f32, dims { rows, cols }, lyt::strided),
                         cpu_engine(), dst.data()) }),
            status::invalid_arguments, "Select op 42", "11", "output");
    EXPECT_SG_ERROR(run({ tc(), ta(), td() }, { td() }),
                    status::invalid_arguments, "Select op 42", "13", "input");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, SamePortTwice) {
    EXPECT_SG_ERROR(run({ tc(), ta(), ta() }, { td() }),
                    status::invalid_arguments, "Select op 42", "port src_0",
                    "twice");
    EXPECT_SG_ERROR(run({ tc(), tc(), tb() }, { td() }),
                    status::invalid_arguments, "Select op 42", "port cond",
                    "twice");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, NullHandleForNonEmptyTensor) {
    EXPECT_SG_ERROR(
            run({ tensor(c, cpu_engine(), nullptr), ta(), tb() }, { td() }),
            status::invalid_arguments, "Select op 42", "port cond", "null");
    EXPECT_SG_ERROR(
            run({ tc(), tensor(a, cpu_engine(), nullptr), tb() }, { td() }),
            status::invalid_arguments, "Select op 42", "port src_0", "null");
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tensor(b, cpu_engine(), nullptr) }, { td() }),
            status::invalid_arguments, "Select op 42", "port src_1", "null");
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tb() }, { tensor(d, cpu_engine(), nullptr) }),
            status::invalid_arguments, "Select op 42", "port dst", "null");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, EmptyEngineTensor) {
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tensor(b, selgraph::engine(), src1.data()) },
                { td() }),
            status::invalid_arguments, "Select op 42", "port src_1", "engine");
    EXPECT_SG_ERROR(
            run({ tensor(c, selgraph::engine(), cond.data()), ta(), tb() },
                { td() }),
            status::invalid_arguments, "Select op 42", "port cond", "engine");
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() },
                        { tensor(d, selgraph::engine(), dst.data()) }),
                    status::invalid_arguments, "Select op 42", "port dst",
                    "engine");
    // A default tensor has no engine and no logical tensor of the op.
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() }, { tensor() }),
                    status::invalid_arguments, "Select op 42");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, DimsDifferingFromCompiled) {
    const lt a_bad(11, dt::f32, dims { rows, cols + 1 }, lyt::strided);
    EXPECT_SG_ERROR(
            run({ tc(), tensor(a_bad, cpu_engine(), src0.data()), tb() },
                { td() }),
            status::invalid_arguments, "Select op 42", "port src_0", "[4,34]",
            "[4,33]");
    const lt c_bad(10, dt::boolean, dims { cols }, lyt::strided);
    EXPECT_SG_ERROR(
            run({ tensor(c_bad, cpu_engine(), cond.data()), ta(), tb() },
                { td() }),
            status::invalid_arguments, "Select op 42", "port cond", "[33]",
            "[4,33]");
    const lt d_bad(13, dt::f32, dims { 1, rows, cols }, lyt::strided);
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() },
                        { tensor(d_bad, cpu_engine(), dst.data()) }),
                    status::invalid_arguments, "Select op 42", "port dst",
                    "[1,4,33]", "[4,33]");
    const lt d_small(13, dt::f32, dims { rows - 1, cols }, lyt::strided);
    EXPECT_SG_ERROR(run({ tc(), ta(), tb() },
                        { tensor(d_small, cpu_engine(), dst.data()) }),
                    status::invalid_arguments, "port dst", "[3,33]");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, TensorsWithUnknownDimsAreAccepted) {
    // A tensor may carry the op's declared logical tensor with unknown dims.
    const lt a_unknown(11, dt::f32, lyt::strided);
    const lt d_partial(13, dt::f32, dims { -1, cols }, lyt::strided);
    run({ tc(), tensor(a_unknown, cpu_engine(), src0.data()), tb() },
        { tensor(d_partial, cpu_engine(), dst.data()) });
    for (size_t i = 0; i < dst.size(); ++i) {
        float f;
        std::memcpy(&f, &dst[i], 4);
        ASSERT_EQ(f, 1.f) << i;
    }
}

TEST_F(ApiExecuteErrors, EmptyStreamAndEmptyCompiledPartition) {
    selgraph::stream empty_stream;
    EXPECT_SG_ERROR(cp.execute(empty_stream, { tc(), ta(), tb() }, { td() }),
                    status::invalid_arguments, "Select op 42", "stream");
    const selgraph::compiled_partition empty;
    EXPECT_SG_ERROR(empty.execute(cpu_stream(), { tc(), ta(), tb() }, { td() }),
                    status::invalid_arguments, "empty");
    EXPECT_TRUE(dst_untouched());
}

TEST_F(ApiExecuteErrors, FailedExecuteLeavesPartitionUsable) {
    EXPECT_SG_ERROR(
            run({ tc(), ta(), tensor(b, cpu_engine(), nullptr) }, { td() }),
            status::invalid_arguments, "port src_1");
    EXPECT_TRUE(dst_untouched());
    for (size_t i = 0; i < cond.size(); ++i)
        cond[i] = static_cast<uint8_t>(i % 2);
    run({ tc(), ta(), tb() }, { td() });
    for (size_t i = 0; i < dst.size(); ++i) {
        float f;
        std::memcpy(&f, &dst[i], 4);
        ASSERT_EQ(f, i % 2 ? 1.f : 2.f) << i;
    }
}

TEST(ApiExecuteSameTensor, OneTensorForBothSources) {
    // Select(cond, x, x): a valid graph (add_op and compile accept it).
    // Executing it with a tensor per partition input port (as returned by
    // get_input_ports) must work and give x.
    const lt c(0, dt::boolean, dims { 40 }, lyt::strided);
    const lt x(1, dt::f32, dims { 40 }, lyt::strided);
    const lt d(3, dt::f32, dims { 40 }, lyt::strided);
    selgraph::graph g(selgraph::engine::kind::cpu);
    ASSERT_EQ(g.add_op(make_select_op(1, c, x, x, d), false), status::success);
    g.finalize();
    const auto parts = g.get_partitions();
    ASSERT_EQ(parts.size(), 1u);
    const auto ports = parts[0].get_input_ports();
    selgraph::compiled_partition cp;
    ASSERT_NO_THROW(cp = parts[0].compile(ports, { d }, cpu_engine()));
    std::vector<uint8_t> cond(40);
    std::vector<float> xs(40), out(40, -1.f);
    for (int i = 0; i < 40; ++i) {
        cond[i] = static_cast<uint8_t>(i % 3);
        xs[i] = static_cast<float>(i) * 0.5f;
    }
    std::vector<tensor> ins;
    for (const auto &p : ports)
        ins.emplace_back(p, cpu_engine(),
                         p.get_id() == 0 ? static_cast<void *>(cond.data())
                                         : static_cast<void *>(xs.data()));
    try {
        cp.execute(cpu_stream(), ins, { tensor(d, cpu_engine(), out.data()) });
    } catch (const selgraph::error &e) {
        FAIL() << "execute of Select(cond, x, x) failed ("
               << selgraph::status2str(e.status) << "): " << e.what();
    }
    for (int i = 0; i < 40; ++i)
        EXPECT_EQ(out[i], xs[i]) << i;
}
