// The shim of the lean build path: compiled once per toolchain with the real torch headers
// (as the cpp source of a load_inline-style extension named mooreeval_lean_shim, so
// <torch/extension.h> is already included), it implements the C boundary of
// include/mooreeval_lean/abi.h with ATen calls and is the Python module that turns a
// lean-built library's entry points (include/mooreeval_lean/bindings.h) into a module
// whose functions behave like those of load_inline's pybind11 module.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "mooreeval_lean/abi.h"
#include "mooreeval_lean/binding_result.h"

#if defined(MOOREEVAL_LEAN_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace py = pybind11;
using TensorPtr = c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

static_assert(static_cast<int>(c10::ScalarType::Float) == 6 &&
                  static_cast<int>(c10::ScalarType::Bool) == 11 &&
                  static_cast<int>(c10::ScalarType::BFloat16) == 15 &&
                  static_cast<int>(c10::ScalarType::Long) == 4,
              "the lean headers' ScalarType values must be c10's");
static_assert(static_cast<int>(c10::DeviceType::CUDA) == 1,
              "the lean headers' DeviceType values must be c10's");

namespace {

at::Tensor borrow(mc_lean_impl p) {
  if (!p) return at::Tensor();
  return at::Tensor(TensorPtr::reclaim_copy(static_cast<c10::TensorImpl*>(p)));
}

mc_lean_impl give(at::Tensor t) {
  if (!t.defined()) return nullptr;
  return t.unsafeReleaseTensorImpl();
}

c10::TensorOptions options_from(const mc_lean_options* o) {
  c10::TensorOptions r;
  if (!o) return r;
  if (o->has_dtype) r = r.dtype(static_cast<c10::ScalarType>(o->dtype));
  if (o->has_device)
    r = r.device(c10::Device(static_cast<c10::DeviceType>(o->device_type),
                             static_cast<c10::DeviceIndex>(o->device_index)));
  if (o->has_layout) r = r.layout(static_cast<c10::Layout>(o->layout));
  if (o->has_requires_grad) r = r.requires_grad(o->requires_grad != 0);
  if (o->has_pinned_memory) r = r.pinned_memory(o->pinned_memory != 0);
  return r;
}

template <typename Get>
void* typed_pointer(const at::Tensor& t, int type, Get get) {
  switch (type) {
    case -1:
      return get.template operator()<void>(t);
    case 0:
      return get.template operator()<uint8_t>(t);
    case 1:
      return get.template operator()<int8_t>(t);
    case 2:
      return get.template operator()<int16_t>(t);
    case 3:
      return get.template operator()<int>(t);
    case 4:
      return get.template operator()<int64_t>(t);
    case 6:
      return get.template operator()<float>(t);
    case 7:
      return get.template operator()<double>(t);
    case 11:
      return get.template operator()<bool>(t);
    default:
      TORCH_CHECK(false, "lean data_ptr: unsupported type code ", type);
  }
}

c10::IntArrayRef ints(const int64_t* p, size_t n) {
  return c10::IntArrayRef(p, n);
}

}  // namespace

extern "C" {

void mc_lean_retain(mc_lean_impl t) {
  c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(t));
}
void mc_lean_release(mc_lean_impl t) {
  c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(t));
}

int64_t mc_lean_dim(mc_lean_impl t) {
  return borrow(t).dim();
}
int64_t mc_lean_numel(mc_lean_impl t) {
  return borrow(t).numel();
}
int64_t mc_lean_size(mc_lean_impl t, int64_t dim) {
  return borrow(t).size(dim);
}
int64_t mc_lean_stride(mc_lean_impl t, int64_t dim) {
  return borrow(t).stride(dim);
}
const int64_t* mc_lean_sizes(mc_lean_impl t, size_t* n) {
  // The array lives in the TensorImpl, which the caller's tensor keeps alive.
  c10::IntArrayRef s = borrow(t).sizes();
  *n = s.size();
  return s.data();
}
const int64_t* mc_lean_strides(mc_lean_impl t, size_t* n) {
  c10::IntArrayRef s = borrow(t).strides();
  *n = s.size();
  return s.data();
}
int8_t mc_lean_scalar_type(mc_lean_impl t) {
  return static_cast<int8_t>(borrow(t).scalar_type());
}
void mc_lean_device(mc_lean_impl t, int8_t* type, int8_t* index) {
  const c10::Device d = borrow(t).device();
  *type = static_cast<int8_t>(d.type());
  *index = static_cast<int8_t>(d.index());
}
void mc_lean_tensor_options(mc_lean_impl t, mc_lean_options* out) {
  const c10::TensorOptions o = borrow(t).options();
  *out = mc_lean_options{};
  out->has_dtype = o.has_dtype(), out->dtype = static_cast<int8_t>(o.dtype().toScalarType());
  out->has_device = o.has_device(), out->device_type = static_cast<int8_t>(o.device().type());
  out->device_index = static_cast<int8_t>(o.device().index());
  out->has_layout = o.has_layout(), out->layout = static_cast<int8_t>(o.layout());
  out->has_requires_grad = o.has_requires_grad(), out->requires_grad = o.requires_grad();
  out->has_pinned_memory = o.has_pinned_memory(), out->pinned_memory = o.pinned_memory();
}
int mc_lean_is_contiguous(mc_lean_impl t) {
  return borrow(t).is_contiguous();
}
int64_t mc_lean_element_size(mc_lean_impl t) {
  return borrow(t).element_size();
}
int64_t mc_lean_storage_offset(mc_lean_impl t) {
  return borrow(t).storage_offset();
}
int mc_lean_requires_grad(mc_lean_impl t) {
  return borrow(t).requires_grad();
}

void* mc_lean_data_ptr(mc_lean_impl t, int type) {
  return typed_pointer(borrow(t), type, []<typename T>(const at::Tensor& x) -> void* {
    if constexpr (std::is_void_v<T>)
      return x.data_ptr();
    else
      return x.data_ptr<T>();
  });
}
void* mc_lean_mutable_data_ptr(mc_lean_impl t, int type) {
  return typed_pointer(borrow(t), type, []<typename T>(const at::Tensor& x) -> void* {
    if constexpr (std::is_void_v<T>)
      return x.mutable_data_ptr();
    else
      return x.mutable_data_ptr<T>();
  });
}
const void* mc_lean_const_data_ptr(mc_lean_impl t, int type) {
  return typed_pointer(borrow(t), type, []<typename T>(const at::Tensor& x) -> void* {
    if constexpr (std::is_void_v<T>)
      return const_cast<void*>(x.const_data_ptr());
    else
      return const_cast<T*>(x.const_data_ptr<T>());
  });
}
double mc_lean_item_double(mc_lean_impl t) {
  return borrow(t).item<double>();
}
int64_t mc_lean_item_int64(mc_lean_impl t) {
  return borrow(t).item<int64_t>();
}

mc_lean_impl mc_lean_contiguous(mc_lean_impl t) {
  return give(borrow(t).contiguous());
}
mc_lean_impl mc_lean_clone(mc_lean_impl t) {
  return give(borrow(t).clone());
}
mc_lean_impl mc_lean_view(mc_lean_impl t, const int64_t* s, size_t n) {
  return give(borrow(t).view(ints(s, n)));
}
mc_lean_impl mc_lean_reshape(mc_lean_impl t, const int64_t* s, size_t n) {
  return give(borrow(t).reshape(ints(s, n)));
}
mc_lean_impl mc_lean_expand(mc_lean_impl t, const int64_t* s, size_t n) {
  return give(borrow(t).expand(ints(s, n)));
}
mc_lean_impl mc_lean_permute(mc_lean_impl t, const int64_t* d, size_t n) {
  return give(borrow(t).permute(ints(d, n)));
}
mc_lean_impl mc_lean_transpose(mc_lean_impl t, int64_t a, int64_t b) {
  return give(borrow(t).transpose(a, b));
}
mc_lean_impl mc_lean_t(mc_lean_impl t) {
  return give(borrow(t).t());
}
mc_lean_impl mc_lean_unsqueeze(mc_lean_impl t, int64_t d) {
  return give(borrow(t).unsqueeze(d));
}
mc_lean_impl mc_lean_squeeze(mc_lean_impl t) {
  return give(borrow(t).squeeze());
}
mc_lean_impl mc_lean_squeeze_dim(mc_lean_impl t, int64_t d) {
  return give(borrow(t).squeeze(d));
}
mc_lean_impl mc_lean_flatten(mc_lean_impl t, int64_t s, int64_t e) {
  return give(borrow(t).flatten(s, e));
}
mc_lean_impl mc_lean_narrow(mc_lean_impl t, int64_t d, int64_t s, int64_t l) {
  return give(borrow(t).narrow(d, s, l));
}
mc_lean_impl mc_lean_select(mc_lean_impl t, int64_t d, int64_t i) {
  return give(borrow(t).select(d, i));
}
mc_lean_impl mc_lean_to_dtype(mc_lean_impl t, int8_t dtype) {
  return give(borrow(t).to(static_cast<c10::ScalarType>(dtype)));
}
void mc_lean_zero_(mc_lean_impl t) {
  borrow(t).zero_();
}
void mc_lean_fill_double_(mc_lean_impl t, double v) {
  borrow(t).fill_(v);
}
void mc_lean_fill_int64_(mc_lean_impl t, int64_t v) {
  borrow(t).fill_(v);
}

mc_lean_impl mc_lean_empty(const int64_t* s, size_t n, const mc_lean_options* o) {
  return give(at::empty(ints(s, n), options_from(o)));
}
mc_lean_impl mc_lean_zeros(const int64_t* s, size_t n, const mc_lean_options* o) {
  return give(at::zeros(ints(s, n), options_from(o)));
}
mc_lean_impl mc_lean_ones(const int64_t* s, size_t n, const mc_lean_options* o) {
  return give(at::ones(ints(s, n), options_from(o)));
}
mc_lean_impl mc_lean_full_double(const int64_t* s, size_t n, double v, const mc_lean_options* o) {
  return give(at::full(ints(s, n), v, options_from(o)));
}
mc_lean_impl mc_lean_full_int64(const int64_t* s, size_t n, int64_t v, const mc_lean_options* o) {
  return give(at::full(ints(s, n), v, options_from(o)));
}
mc_lean_impl mc_lean_empty_like(mc_lean_impl t, const mc_lean_options* o) {
  return give(at::empty_like(borrow(t), options_from(o)));
}
mc_lean_impl mc_lean_zeros_like(mc_lean_impl t, const mc_lean_options* o) {
  return give(at::zeros_like(borrow(t), options_from(o)));
}
mc_lean_impl mc_lean_ones_like(mc_lean_impl t, const mc_lean_options* o) {
  return give(at::ones_like(borrow(t), options_from(o)));
}

void mc_lean_check_failed(const char* func, const char* file, uint32_t line, const char* msg) {
  c10::detail::torchCheckFail(func, file, line, std::string(msg));
}
void mc_lean_internal_assert_failed(const char* func, const char* file, uint32_t line, const char* cond,
                                    const char* msg) {
  const std::string cond_msg = std::string(cond) + " INTERNAL ASSERT FAILED at \"" + file +
                               "\":" + std::to_string(line) + ", please report a bug to PyTorch. ";
  c10::detail::torchInternalAssertFail(func, file, line, cond_msg.c_str(), std::string(msg));
}
void mc_lean_not_implemented(const char* func, const char* file, uint32_t line, const char* msg) {
  throw c10::NotImplementedError(c10::SourceLocation{func, file, line}, std::string(msg));
}
const char* mc_lean_scalar_type_name(int8_t dtype) {
  return c10::toString(static_cast<c10::ScalarType>(dtype));
}
const char* mc_lean_type_meta_name(int8_t dtype) {
  // TypeMeta names are static strings (the C++ type's name), so the pointer stays valid.
  return c10::scalarTypeToTypeMeta(static_cast<c10::ScalarType>(dtype)).name().data();
}

#if defined(MOOREEVAL_LEAN_CUDA)
void* mc_lean_cuda_current_stream(int8_t d) {
  return c10::cuda::getCurrentCUDAStream(d).stream();
}
void* mc_lean_cuda_default_stream(int8_t d) {
  return c10::cuda::getDefaultCUDAStream(d).stream();
}
int8_t mc_lean_cuda_current_device(void) {
  return static_cast<int8_t>(c10::cuda::current_device());
}
void mc_lean_cuda_set_device(int8_t d) {
  c10::cuda::set_device(d);
}
const void* mc_lean_cuda_device_properties(int8_t d) {
  return at::cuda::getDeviceProperties(d);
}
void mc_lean_cuda_check(int err, const char* file, const char* func, uint32_t line) {
  c10::cuda::c10_cuda_check_implementation(err, file, func, line, true);
}
#endif

}  // extern "C"

// ---- the Python side ------------------------------------------------------------------

namespace {

using mooreeval_lean::binding::Result;
using SigFn = const char* (*)();
using CallFn = void (*)(void**, Result*);

// Converts the Python arguments with pybind11's casters (convert mode, as a single-overload
// m.def ends up using), calls the entry point and converts the result back.
py::object invoke(const std::string& name, const std::string& sig, CallFn call, const py::args& args,
                  const py::kwargs& kwargs) {
  const std::string codes = sig.substr(2);
  if (kwargs.size() != 0 || args.size() != codes.size())
    throw py::type_error(name + "(): incompatible function arguments: expected " +
                         std::to_string(codes.size()) + " positional arguments, got " +
                         std::to_string(args.size()) + (kwargs.size() ? " and keyword arguments" : ""));
  // Storage for every slot; std::vector<> members keep addresses stable once sized.
  const size_t n = codes.size();
  std::vector<at::Tensor> tensors(n);
  std::vector<mc_lean_impl> impls(n);
  std::vector<double> doubles(n);
  std::vector<float> floats(n);
  std::vector<int64_t> longs(n);
  std::vector<int> ints32(n);
  std::unique_ptr<bool[]> bools(new bool[n]());  // not vector<bool>: slots need addresses
  std::vector<std::vector<int64_t>> int_lists(n);
  std::vector<std::vector<at::Tensor>> tensor_lists(n);
  std::vector<std::vector<mc_lean_impl>> impl_lists(n);
  std::vector<std::string> strings(n);
  std::vector<void*> slots(n);
  for (size_t i = 0; i < n; ++i) {
    py::handle a = args[i];
    try {
      switch (codes[i]) {
        case 'T':
          tensors[i] = py::cast<at::Tensor>(a);
          impls[i] = tensors[i].defined() ? tensors[i].unsafeGetTensorImpl() : nullptr;
          slots[i] = &impls[i];
          break;
        case 'd':
          doubles[i] = py::cast<double>(a), slots[i] = &doubles[i];
          break;
        case 'f':
          floats[i] = py::cast<float>(a), slots[i] = &floats[i];
          break;
        case 'l':
          longs[i] = py::cast<int64_t>(a), slots[i] = &longs[i];
          break;
        case 'i':
          ints32[i] = py::cast<int>(a), slots[i] = &ints32[i];
          break;
        case 'b':
          bools[i] = py::cast<bool>(a), slots[i] = &bools[i];
          break;
        case 'L':
          int_lists[i] = py::cast<std::vector<int64_t>>(a), slots[i] = &int_lists[i];
          break;
        case 'A':
          int_lists[i] = py::cast<at::IntArrayRef>(a).vec(), slots[i] = &int_lists[i];
          break;
        case 'V':
          tensor_lists[i] = py::cast<std::vector<at::Tensor>>(a);
          for (auto& t : tensor_lists[i])
            impl_lists[i].push_back(t.defined() ? t.unsafeGetTensorImpl() : nullptr);
          slots[i] = &impl_lists[i];
          break;
        case 's':
          strings[i] = py::cast<std::string>(a), slots[i] = &strings[i];
          break;
        default:
          throw std::logic_error("bad signature code");
      }
    } catch (const py::cast_error&) {
      throw py::type_error(name + "(): incompatible function arguments: argument " + std::to_string(i) +
                           " (" + std::string(py::str(py::type::handle_of(a).attr("__name__"))) +
                           ") cannot be converted");
    }
  }
  Result r;
  call(slots.data(), &r);
  auto adopt = [](mc_lean_impl p) {
    return p ? at::Tensor(TensorPtr::reclaim(static_cast<c10::TensorImpl*>(p))) : at::Tensor();
  };
  switch (r.kind) {
    case 'v':
      return py::none();
    case 'T':
      return py::cast(adopt(r.tensor));
    case 'd':
      return py::float_(r.d);
    case 'l':
      return py::int_(r.l);
    case 'b':
      return py::bool_(r.l != 0);
    case 'V':
    case 'U': {
      std::vector<at::Tensor> out;
      for (mc_lean_impl p : r.tensors) out.push_back(adopt(p));
      if (r.kind == 'V') return py::cast(out);
      py::tuple t(out.size());
      for (size_t i = 0; i < out.size(); ++i) t[i] = py::cast(out[i]);
      return std::move(t);
    }
    default:
      throw std::logic_error("bad result kind");
  }
}

// Loads a lean-built library and returns a module with one callable per function.
py::object load(const std::string& path, const std::string& module_name,
                const std::vector<std::pair<std::string, std::string>>& functions, bool error_handling) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed, like an extension module
  if (!handle) throw py::import_error(std::string("cannot load ") + path + ": " + ::dlerror());
  py::object module = py::module_::import("types").attr("ModuleType")(module_name);
  module.attr("__file__") = path;
  for (const auto& [fn, doc] : functions) {
    auto sig_fn = reinterpret_cast<SigFn>(::dlsym(handle, ("mooreeval_lean_sig_" + fn).c_str()));
    auto call_fn = reinterpret_cast<CallFn>(::dlsym(handle, ("mooreeval_lean_call_" + fn).c_str()));
    if (!sig_fn || !call_fn) throw py::import_error(path + " has no lean entry point for '" + fn + "'");
    const std::string sig = sig_fn();
    if (sig.size() < 2 || sig[1] != ':')
      throw py::import_error(path + ": malformed signature for '" + fn + "'");
    auto body = [fn, sig, call_fn](py::args args, py::kwargs kwargs) {
      return invoke(fn, sig, call_fn, args, kwargs);
    };
    py::cpp_function f;
    if (error_handling)
      f = py::cpp_function(torch::wrap_pybind_function(body), py::name(fn.c_str()), py::doc(doc.c_str()));
    else
      f = py::cpp_function(body, py::name(fn.c_str()), py::doc(doc.c_str()));
    module.attr(fn.c_str()) = f;
  }
  return module;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "MooreEval lean build path: loads lean-built extension libraries";
  m.def("load", &load, "load(path, module_name, [(function, doc)], error_handling) -> module");
}
