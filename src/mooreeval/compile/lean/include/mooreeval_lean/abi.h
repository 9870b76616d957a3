// The C boundary between a candidate compiled against the lean headers and the shim
// library (src/mooreeval/compile/lean/shim.cpp), which is compiled once per toolchain against the
// real torch headers and implements every function below by calling ATen.
//
// A tensor crosses as an opaque `c10::TensorImpl*`; functions returning `mc_lean_impl`
// hand over one reference (the receiver releases it), arguments are borrowed. Errors are
// C++ exceptions thrown by the shim (c10::Error and friends); they unwind through the
// candidate's frames back into the shim's call wrapper, which turns them into Python
// exceptions exactly as torch::wrap_pybind_function does. Both sides are built by the same
// g++ and libstdc++, so this is well defined.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef void* mc_lean_impl;

// c10::TensorOptions with its optional fields (0/1 `has_*` flags).
struct mc_lean_options {
  int8_t has_dtype, dtype;  // c10::ScalarType value
  int8_t has_device, device_type, device_index;
  int8_t has_requires_grad, requires_grad;
  int8_t has_pinned_memory, pinned_memory;
  int8_t has_layout, layout;  // c10::Layout value
};

void mc_lean_retain(mc_lean_impl t);
void mc_lean_release(mc_lean_impl t);

int64_t mc_lean_dim(mc_lean_impl t);
int64_t mc_lean_numel(mc_lean_impl t);
int64_t mc_lean_size(mc_lean_impl t, int64_t dim);
int64_t mc_lean_stride(mc_lean_impl t, int64_t dim);
const int64_t* mc_lean_sizes(mc_lean_impl t, size_t* n);
const int64_t* mc_lean_strides(mc_lean_impl t, size_t* n);
int8_t mc_lean_scalar_type(mc_lean_impl t);
void mc_lean_device(mc_lean_impl t, int8_t* type, int8_t* index);
void mc_lean_tensor_options(mc_lean_impl t, mc_lean_options* out);
int mc_lean_is_contiguous(mc_lean_impl t);
int64_t mc_lean_element_size(mc_lean_impl t);
int64_t mc_lean_storage_offset(mc_lean_impl t);
int mc_lean_requires_grad(mc_lean_impl t);
// `type` is a c10::ScalarType value, or -1 for the untyped data_ptr().
void* mc_lean_data_ptr(mc_lean_impl t, int type);
void* mc_lean_mutable_data_ptr(mc_lean_impl t, int type);
const void* mc_lean_const_data_ptr(mc_lean_impl t, int type);
double mc_lean_item_double(mc_lean_impl t);
int64_t mc_lean_item_int64(mc_lean_impl t);

// Tensor -> tensor methods (a new reference).
mc_lean_impl mc_lean_contiguous(mc_lean_impl t);
mc_lean_impl mc_lean_clone(mc_lean_impl t);
mc_lean_impl mc_lean_view(mc_lean_impl t, const int64_t* sizes, size_t n);
mc_lean_impl mc_lean_reshape(mc_lean_impl t, const int64_t* sizes, size_t n);
mc_lean_impl mc_lean_expand(mc_lean_impl t, const int64_t* sizes, size_t n);
mc_lean_impl mc_lean_permute(mc_lean_impl t, const int64_t* dims, size_t n);
mc_lean_impl mc_lean_transpose(mc_lean_impl t, int64_t a, int64_t b);
mc_lean_impl mc_lean_t(mc_lean_impl t);
mc_lean_impl mc_lean_unsqueeze(mc_lean_impl t, int64_t dim);
mc_lean_impl mc_lean_squeeze(mc_lean_impl t);
mc_lean_impl mc_lean_squeeze_dim(mc_lean_impl t, int64_t dim);
mc_lean_impl mc_lean_flatten(mc_lean_impl t, int64_t start, int64_t end);
mc_lean_impl mc_lean_narrow(mc_lean_impl t, int64_t dim, int64_t start, int64_t length);
mc_lean_impl mc_lean_select(mc_lean_impl t, int64_t dim, int64_t index);
mc_lean_impl mc_lean_to_dtype(mc_lean_impl t, int8_t dtype);
// In-place methods (no new reference).
void mc_lean_zero_(mc_lean_impl t);
void mc_lean_fill_double_(mc_lean_impl t, double v);
void mc_lean_fill_int64_(mc_lean_impl t, int64_t v);

// Factories (a new reference).
mc_lean_impl mc_lean_empty(const int64_t* sizes, size_t n, const mc_lean_options* o);
mc_lean_impl mc_lean_zeros(const int64_t* sizes, size_t n, const mc_lean_options* o);
mc_lean_impl mc_lean_ones(const int64_t* sizes, size_t n, const mc_lean_options* o);
mc_lean_impl mc_lean_full_double(const int64_t* sizes, size_t n, double v, const mc_lean_options* o);
mc_lean_impl mc_lean_full_int64(const int64_t* sizes, size_t n, int64_t v, const mc_lean_options* o);
mc_lean_impl mc_lean_empty_like(mc_lean_impl t, const mc_lean_options* o);
mc_lean_impl mc_lean_zeros_like(mc_lean_impl t, const mc_lean_options* o);
mc_lean_impl mc_lean_ones_like(mc_lean_impl t, const mc_lean_options* o);

// TORCH_CHECK / TORCH_INTERNAL_ASSERT failure: throws c10::Error like torch does.
[[noreturn]] void mc_lean_check_failed(const char* func, const char* file, uint32_t line, const char* msg);
[[noreturn]] void mc_lean_internal_assert_failed(const char* func, const char* file, uint32_t line,
                                                 const char* cond, const char* msg);
// TORCH_CHECK_NOT_IMPLEMENTED (the AT_DISPATCH_* default case): throws c10::NotImplementedError.
[[noreturn]] void mc_lean_not_implemented(const char* func, const char* file, uint32_t line, const char* msg);
const char* mc_lean_scalar_type_name(int8_t dtype);  // c10::toString: "Float"
const char* mc_lean_type_meta_name(int8_t dtype);    // caffe2::TypeMeta::name(): "float"

// CUDA (defined only in a shim built for the cuda backend).
void* mc_lean_cuda_current_stream(int8_t device_index);  // cudaStream_t
void* mc_lean_cuda_default_stream(int8_t device_index);
int8_t mc_lean_cuda_current_device(void);
void mc_lean_cuda_set_device(int8_t device_index);
const void* mc_lean_cuda_device_properties(int8_t device_index);  // const cudaDeviceProp*
void mc_lean_cuda_check(int err, const char* file, const char* func, uint32_t line);
}
