// tensor(lt, engine) (the library allocates) and tensor::make_scalar_tensor
// (a host_scalar passed on the host), as in oneDNN's dnnl_graph.hpp.
#include <cmath>
#include <limits>

#include "api_test_utils.hpp"

namespace {

using namespace sgt;
using pt = lt::property_type;

TEST(ApiTensor, HostScalarIsPropertyThree) {
    EXPECT_EQ(static_cast<int>(pt::host_scalar), 3);
}

// Attention's masked fill: dst = mask ? scores : -inf, the -inf a host
// scalar copied when the tensor is made.
TEST(ApiTensor, HostScalarFillMatchesTheNaiveSelect) {
    const dims sd = { 2, 3, 5 };
    lt c(0, dt::boolean, { 1, 3, 5 }, lyt::strided);
    lt a(1, dt::f32, sd, lyt::strided);
    lt b(2, dt::f32, dims {}, lyt::strided, pt::host_scalar);
    lt d(3, dt::f32, sd, lyt::strided);
    auto cp = compile_select(c, a, b, d);

    std::mt19937 rng(7);
    std::vector<uint8_t> cond(15);
    fill_cond(cond.data(), cond.size(), rng);
    std::vector<float> src(30);
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<float>(i) * 0.5f - 3.0f;
    float fill = -std::numeric_limits<float>::infinity();
    selgraph::tensor ts = selgraph::tensor::make_scalar_tensor(b, &fill);
    fill = 42.0f; // copied at make_scalar_tensor: later changes do not count
    EXPECT_FALSE(ts.get_engine()); // a host scalar has no engine

    selgraph::tensor td(d, cpu_engine()); // the library allocates dst
    ASSERT_NE(td.get_data_handle(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(td.get_data_handle()) % 64, 0u);
    cp.execute(cpu_stream(),
               { { c, cpu_engine(), cond.data() },
                 { a, cpu_engine(), src.data() },
                 ts },
               { td });
    const float *got = static_cast<const float *>(td.get_data_handle());
    for (int i = 0; i < 30; ++i) {
        const bool m = cond[i % 15] != 0;
        if (m)
            EXPECT_EQ(got[i], src[i]) << i;
        else
            EXPECT_TRUE(std::isinf(got[i]) && got[i] < 0) << i << " " << got[i];
    }
}

TEST(ApiTensor, LibraryBufferLivesWithTheLastCopy) {
    lt t(5, dt::s32, { 4, 1000 }, lyt::strided);
    selgraph::tensor copy;
    void *h = nullptr;
    {
        selgraph::tensor owner(t, cpu_engine());
        h = owner.get_data_handle();
        auto *p = static_cast<int32_t *>(h);
        for (int i = 0; i < 4000; ++i)
            p[i] = i; // the whole buffer is writable
        copy = owner;
    }
    EXPECT_EQ(copy.get_data_handle(), h);
    EXPECT_EQ(static_cast<int32_t *>(copy.get_data_handle())[3999], 3999);
    // set_data_handle points elsewhere; the library's buffer stays alive
    // with the tensor (freed with it; ASan checks).
    int32_t mine[1] = { 0 };
    copy.set_data_handle(mine);
    EXPECT_EQ(copy.get_data_handle(), mine);
}

TEST(ApiTensor, ErrorsNameTheTensor) {
    float v = 1.0f;
    lt not_scalar(7, dt::f32, dims {}, lyt::strided, pt::variable);
    EXPECT_SG_ERROR(selgraph::tensor::make_scalar_tensor(not_scalar, &v),
                    status::invalid_arguments, "make_scalar_tensor",
                    "logical tensor 7", "not a host_scalar");
    lt many(8, dt::f32, dims { 2 }, lyt::strided, pt::host_scalar);
    EXPECT_SG_ERROR(selgraph::tensor::make_scalar_tensor(many, &v),
                    status::invalid_arguments, "logical tensor 8", "[2]",
                    "one element");
    lt one(9, dt::f32, dims { 1 }, lyt::strided, pt::host_scalar);
    EXPECT_SG_ERROR(selgraph::tensor::make_scalar_tensor(one, nullptr),
                    status::invalid_arguments, "logical tensor 9", "null");
    lt unknown(10, dt::f32, 3, lyt::strided);
    EXPECT_SG_ERROR(selgraph::tensor(unknown, cpu_engine()),
                    status::invalid_shape, "logical tensor 10", "unknown dims");
    lt huge(11, dt::f32, { int64_t(1) << 62, 8 }, lyt::strided);
    EXPECT_SG_ERROR(selgraph::tensor(huge, cpu_engine()), status::invalid_shape,
                    "11");
}

} // namespace
