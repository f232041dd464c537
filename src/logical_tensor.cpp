#include "common.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace selgraph {

using namespace impl;

namespace {

void check_ndims(size_t tid, int64_t n) {
    if (n > logical_tensor::max_ndims)
        fail(status::invalid_arguments, "logical tensor ", tid, ": ", n,
             " dimensions, at most ", logical_tensor::max_ndims,
             " are supported");
}

// Dims are known (>= 0) or unknown (unknown_dim or -1).
void check_dims(size_t tid, const logical_tensor::dims &d) {
    for (size_t i = 0; i < d.size(); ++i)
        if (d[i] < 0 && !is_unknown_dim(d[i]))
            fail(status::invalid_shape, "logical tensor ", tid, ": dim ", i,
                 " of ", dims2str(d), " is ", d[i],
                 "; a dim is non-negative, or -1 or unknown_dim (",
                 logical_tensor::unknown_dim, ") when unknown");
}

} // namespace

logical_tensor::logical_tensor() = default;

logical_tensor::logical_tensor(size_t tid, data_type dtype, int32_t ndims,
                               layout_type ltype, property_type ptype)
    : id_(tid)
    , dtype_(dtype)
    , ltype_(ltype)
    , ptype_(ptype)
    , ndims_(ndims) {
    check_ndims(tid, ndims);
    if (ndims < 0)
        ndims_ = unknown_ndims;
    std::fill(dims_, dims_ + max_ndims, unknown_dim);
    std::fill(strides_, strides_ + max_ndims, unknown_dim);
}

logical_tensor::logical_tensor(size_t tid, data_type dtype, layout_type ltype)
    : logical_tensor(tid, dtype, unknown_ndims, ltype) {}

logical_tensor::logical_tensor(size_t tid, data_type dtype, const dims &adims,
                               layout_type ltype, property_type ptype)
    : logical_tensor(tid, dtype, static_cast<int32_t>(adims.size()), ltype,
                     ptype) {
    check_dims(tid, adims);
    std::copy(adims.begin(), adims.end(), dims_);
    if (ltype == layout_type::strided) {
        // Dense row-major strides where every dim is known, as oneDNN does.
        bool known = std::all_of(adims.begin(), adims.end(),
                                 [](dim d) { return d >= 0; });
        if (known) {
            dim s = 1;
            for (int i = ndims_ - 1; i >= 0; --i) {
                strides_[i] = s;
                if (!mul_ok(s, std::max<dim>(dims_[i], 1), s))
                    s = 0;
            }
        }
    }
}

logical_tensor::logical_tensor(size_t tid, data_type dtype, const dims &adims,
                               const dims &strides, property_type ptype)
    : logical_tensor(tid, dtype, adims, layout_type::strided, ptype) {
    if (strides.size() != adims.size())
        fail(status::invalid_arguments, "logical tensor ", tid, ": dims ",
             dims2str(adims), " and strides ", dims2str(strides),
             " differ in rank");
    std::copy(strides.begin(), strides.end(), strides_);
}

logical_tensor::dims logical_tensor::get_dims() const {
    if (ndims_ < 0)
        fail(status::invalid_arguments, "logical tensor ", id_,
             ": the number of dimensions is unknown");
    return dims(dims_, dims_ + ndims_);
}

logical_tensor::dims logical_tensor::get_strides() const {
    if (ltype_ != layout_type::strided)
        fail(status::invalid_arguments, "logical tensor ", id_,
             ": strides are defined for the strided layout only, not ",
             layout2str(ltype_));
    if (ndims_ < 0)
        fail(status::invalid_arguments, "logical tensor ", id_,
             ": the number of dimensions is unknown");
    return dims(strides_, strides_ + ndims_);
}

size_t logical_tensor::get_mem_size() const {
    const size_t esize = dtype_size(dtype_);
    if (ndims_ < 0)
        fail(status::invalid_shape, "logical tensor ", id_,
             ": memory size of a tensor with unknown rank");
    for (int i = 0; i < ndims_; ++i) {
        if (dims_[i] < 0)
            fail(status::invalid_shape, "logical tensor ", id_,
                 ": memory size of a tensor with unknown dims ",
                 dims2str(dims_, ndims_));
        if (dims_[i] == 0)
            return 0;
    }
    int64_t elems = 1;
    const bool strided = ltype_ == layout_type::strided;
    for (int i = 0; i < ndims_; ++i) {
        bool ok;
        if (strided) {
            int64_t span;
            ok = strides_[i] >= 0 && mul_ok(dims_[i] - 1, strides_[i], span)
                 && add_ok(elems, span, elems);
        } else {
            ok = mul_ok(elems, dims_[i], elems);
        }
        if (!ok)
            fail(status::invalid_shape, "logical tensor ", id_, ": dims ",
                 dims2str(dims_, ndims_),
                 strided ? " with strides " + dims2str(strides_, ndims_)
                         : std::string(),
                 " overflow or have negative strides");
    }
    int64_t bytes;
    if (!mul_ok(elems, static_cast<int64_t>(esize), bytes))
        fail(status::invalid_shape, "logical tensor ", id_, ": dims ",
             dims2str(dims_, ndims_), " overflow 64-bit byte sizes");
    return static_cast<size_t>(bytes);
}

bool logical_tensor::is_equal(const logical_tensor &lt) const {
    if (id_ != lt.id_ || dtype_ != lt.dtype_ || ltype_ != lt.ltype_
        || ptype_ != lt.ptype_ || ndims_ != lt.ndims_)
        return false;
    for (int i = 0; i < std::max(ndims_, 0); ++i) {
        if (dims_[i] != lt.dims_[i])
            return false;
        if (ltype_ == layout_type::strided && strides_[i] != lt.strides_[i])
            return false;
    }
    return true;
}

tensor::tensor(const logical_tensor &lt, const engine &aengine, void *handle)
    : lt_(lt)
    , engine_(aengine)
    , handle_(handle) {}

namespace {
std::shared_ptr<void> allocate(size_t tid, size_t bytes) {
    // 64-byte aligned, at least one line so that the handle is never null.
    const size_t n = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, n);
    if (!p)
        fail(status::out_of_memory, "tensor: logical tensor ", tid,
             ": cannot allocate ", bytes, " bytes");
    return std::shared_ptr<void>(p, std::free);
}
} // namespace

tensor::tensor(const logical_tensor &lt, const engine &aengine)
    : lt_(lt)
    , engine_(aengine) {
    if (lt.get_ndims() < 0)
        fail(status::invalid_arguments, "tensor: logical tensor ", lt.get_id(),
             ": the library allocates only for known dims");
    owned_ = allocate(lt.get_id(), lt.get_mem_size());
    handle_ = owned_.get();
}

tensor tensor::make_scalar_tensor(const logical_tensor &lt, void *scalar) {
    if (lt.get_property_type() != logical_tensor::property_type::host_scalar)
        fail(status::invalid_arguments, "make_scalar_tensor: logical tensor ",
             lt.get_id(), " is not a host_scalar");
    bool one = lt.get_ndims() >= 0;
    for (int i = 0; one && i < lt.get_ndims(); ++i)
        one = lt.dims_[i] == 1;
    const size_t size = dtype_size(lt.get_data_type());
    if (!one || size == 0)
        fail(status::invalid_arguments, "make_scalar_tensor: logical tensor ",
             lt.get_id(), " (", dtype2str(lt.get_data_type()), ", dims ",
             dims2str(lt.dims_, lt.get_ndims()),
             ") is not one element of a byte-sized type");
    if (!scalar)
        fail(status::invalid_arguments, "make_scalar_tensor: logical tensor ",
             lt.get_id(), ": null scalar");
    tensor t;
    t.lt_ = lt;
    t.owned_ = allocate(lt.get_id(), size);
    std::memcpy(t.owned_.get(), scalar, size);
    t.handle_ = t.owned_.get();
    return t;
}

} // namespace selgraph
