// logical_tensor: constructors, dims, strides, memory sizes, equality; the
// tensor handle class.
#include "tests/api_test_utils.hpp"

using namespace sgt;

TEST(ApiLogicalTensor, DefaultIsEmpty) {
    const lt t;
    EXPECT_EQ(t.get_id(), 0u);
    EXPECT_EQ(t.get_data_type(), dt::undef);
    EXPECT_EQ(t.get_ndims(), -1);
    EXPECT_EQ(t.get_layout_type(), lyt::undef);
    EXPECT_SG_ERROR(t.get_dims(), status::invalid_arguments, "unknown");
}

TEST(ApiLogicalTensor, UnknownNdims) {
    const lt t(5, dt::f32, lyt::strided);
    EXPECT_EQ(t.get_id(), 5u);
    EXPECT_EQ(t.get_data_type(), dt::f32);
    EXPECT_EQ(t.get_layout_type(), lyt::strided);
    EXPECT_EQ(t.get_ndims(), lt::unknown_ndims);
    EXPECT_SG_ERROR(t.get_dims(), status::invalid_arguments, "5");
    EXPECT_SG_ERROR(t.get_strides(), status::invalid_arguments, "5");
    EXPECT_SG_ERROR(t.get_mem_size(), status::invalid_shape, "5");
    const lt u(6, dt::bf16);
    EXPECT_EQ(u.get_ndims(), -1);
    EXPECT_EQ(u.get_layout_type(), lyt::undef);
}

TEST(ApiLogicalTensor, KnownNdimsUnknownDims) {
    const lt t(7, dt::f16, 3, lyt::strided, lt::property_type::constant);
    EXPECT_EQ(t.get_ndims(), 3);
    EXPECT_EQ(t.get_dims(),
              (dims { lt::unknown_dim, lt::unknown_dim, lt::unknown_dim }));
    EXPECT_EQ(t.get_property_type(), lt::property_type::constant);
    EXPECT_SG_ERROR(t.get_mem_size(), status::invalid_shape, "7");
    const lt partial(8, dt::f32, { -1, 4 }, lyt::strided);
    EXPECT_EQ(partial.get_dims(), (dims { -1, 4 }));
    EXPECT_SG_ERROR(partial.get_mem_size(), status::invalid_shape, "8");
}

TEST(ApiLogicalTensor, DimsAndDenseStrides) {
    const lt t(9, dt::f32, { 2, 3, 4 }, lyt::strided);
    EXPECT_EQ(t.get_ndims(), 3);
    EXPECT_EQ(t.get_dims(), (dims { 2, 3, 4 }));
    EXPECT_EQ(t.get_strides(), (dims { 12, 4, 1 }));
    EXPECT_EQ(t.get_mem_size(), 2u * 3 * 4 * 4);
    // Dims of 1 and 0 still give row-major strides.
    const lt one(10, dt::bf16, { 5, 1, 3 }, lyt::strided);
    EXPECT_EQ(one.get_strides(), (dims { 3, 3, 1 }));
    EXPECT_EQ(one.get_mem_size(), 5u * 3 * 2);
}

TEST(ApiLogicalTensor, ExplicitStrides) {
    const lt t(11, dt::f32, { 2, 3 }, dims { 8, 1 });
    EXPECT_EQ(t.get_layout_type(), lyt::strided);
    EXPECT_EQ(t.get_strides(), (dims { 8, 1 }));
    // Bytes spanned: (1 + 1*8 + 2*1) elements.
    EXPECT_EQ(t.get_mem_size(), 11u * 4);
    const lt tr(12, dt::f16, { 3, 4 }, dims { 1, 3 });
    EXPECT_EQ(tr.get_mem_size(), 12u * 2);
    const lt bc(13, dt::f32, { 4, 3 }, dims { 0, 1 });
    EXPECT_EQ(bc.get_mem_size(), 3u * 4);
    EXPECT_SG_ERROR(lt(14, dt::f32, { 2, 3 }, dims { 1 }),
                    status::invalid_arguments, "14", "[2,3]", "[1]");
}

TEST(ApiLogicalTensor, MemSize) {
    EXPECT_EQ(lt(1, dt::boolean, dims { 5 }, lyt::strided).get_mem_size(), 5u);
    EXPECT_EQ(lt(1, dt::f32, dims {}, lyt::strided).get_mem_size(), 4u);
    EXPECT_EQ(lt(1, dt::f16, dims {}, lyt::strided).get_mem_size(), 2u);
    EXPECT_EQ(lt(1, dt::f32, { 0, 3 }, lyt::strided).get_mem_size(), 0u);
    EXPECT_EQ(lt(1, dt::f32, { 3, 0, 7 }, lyt::strided).get_mem_size(), 0u);
    EXPECT_EQ(lt(1, dt::f32, { 2, 3 }, lyt::any).get_mem_size(), 24u);
}

TEST(ApiLogicalTensor, MemSizeOverflowIsInvalidShape) {
    const int64_t big = int64_t(1) << 40;
    EXPECT_SG_ERROR(lt(15, dt::f32, { big, big }, lyt::strided).get_mem_size(),
                    status::invalid_shape, "15");
    EXPECT_SG_ERROR(lt(16, dt::f32, { big, big }, lyt::any).get_mem_size(),
                    status::invalid_shape, "16");
    // Elements fit in int64 but bytes do not.
    EXPECT_SG_ERROR(lt(17, dt::f32, dims { int64_t(1) << 62 }, lyt::strided)
                            .get_mem_size(),
                    status::invalid_shape, "17");
}

TEST(ApiLogicalTensor, GetStridesNeedsStridedLayout) {
    for (lyt l : { lyt::any, lyt::undef, lyt::opaque }) {
        const lt t(18, dt::f32, { 2, 3 }, l);
        EXPECT_EQ(t.get_dims(), (dims { 2, 3 }));
        EXPECT_SG_ERROR(t.get_strides(), status::invalid_arguments, "18",
                        "strided");
    }
}

TEST(ApiLogicalTensor, TooManyDims) {
    EXPECT_NO_THROW(lt(19, dt::f32, dims(12, 1), lyt::strided));
    EXPECT_SG_ERROR(lt(19, dt::f32, dims(13, 1), lyt::strided),
                    status::invalid_arguments, "19", "13");
    EXPECT_SG_ERROR(lt(19, dt::f32, 13, lyt::strided),
                    status::invalid_arguments, "19");
    EXPECT_EQ(lt(19, dt::f32, dims(12, 1), lyt::strided).get_ndims(), 12);
}

TEST(ApiLogicalTensor, IsEqual) {
    const lt a(1, dt::f32, { 2, 3 }, lyt::strided);
    EXPECT_TRUE(a.is_equal(a));
    EXPECT_TRUE(a.is_equal(lt(1, dt::f32, { 2, 3 }, lyt::strided)));
    EXPECT_TRUE(a.is_equal(lt(1, dt::f32, { 2, 3 }, dims { 3, 1 })));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f32, { 2, 3 }, dims { 4, 1 })));
    EXPECT_FALSE(a.is_equal(lt(2, dt::f32, { 2, 3 }, lyt::strided)));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f16, { 2, 3 }, lyt::strided)));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f32, { 3, 2 }, lyt::strided)));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f32, { 2, 3, 1 }, lyt::strided)));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f32, { 2, 3 }, lyt::any)));
    EXPECT_FALSE(a.is_equal(lt(1, dt::f32, lyt::strided)));
    EXPECT_TRUE(lt(4, dt::bf16, lyt::strided)
                        .is_equal(lt(4, dt::bf16, lyt::strided)));
}

TEST(ApiLogicalTensor, TensorHandle) {
    const lt a(3, dt::f32, dims { 4 }, lyt::strided);
    float buf[4] = {};
    selgraph::tensor t(a, cpu_engine(), buf);
    EXPECT_EQ(t.get_data_handle(), buf);
    EXPECT_TRUE(t.get_logical_tensor().is_equal(a));
    EXPECT_EQ(t.get_engine().get_kind(), selgraph::engine::kind::cpu);
    float other[4] = {};
    t.set_data_handle(other);
    EXPECT_EQ(t.get_data_handle(), other);
    const selgraph::tensor empty;
    EXPECT_EQ(empty.get_data_handle(), nullptr);
}
