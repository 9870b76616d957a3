// The Python bindings of a lean-built extension, as plain C entry points that the shim
// wraps into Python callables (the lean counterpart of load_inline's generated
// PYBIND11_MODULE with one m.def per function).
//
// For each bound function `fn`, MOOREEVAL_LEAN_EXPORT(fn) defines
//   const char* mooreeval_lean_sig_fn();   // "<return code>:<argument codes>"
//   void mooreeval_lean_call_fn(void** args, mooreeval_lean::binding::Result* out);
// Argument slots, filled by the shim after converting the Python arguments with pybind11's
// own casters: 'T' Tensor → mc_lean_impl* (borrowed, null = undefined), 'd' double*,
// 'f' float*, 'l' int64_t*, 'i' int*, 'b' bool*, 'L' std::vector<int64_t>* (for a
// std::vector<int64_t> parameter), 'A' std::vector<int64_t>* (for an IntArrayRef), 'V'
// std::vector<mc_lean_impl>* (borrowed), 's' std::string*. Return codes: 'v' void,
// 'T' tensor, 'V' list of tensors, 'U' tuple of tensors, 'd' float, 'l' int, 'b' bool.
// A parameter or return type outside these has no specialisation below, so the lean
// compile fails and the build falls back to the full one (whose pybind11 handles it).
#pragma once

#if !defined(MOOREEVAL_LEAN_NO_STRING)  // see tensor.h
#include <string>
#endif
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mooreeval_lean/binding_result.h"
#include "mooreeval_lean/tensor.h"

namespace mooreeval_lean::binding {

template <typename T>
struct Arg;  // unsupported parameter type: no definition
template <>
struct Arg<at::Tensor> {
  static constexpr char code = 'T';
  using Stored = at::Tensor;
  static Stored get(void* p) {
    mc_lean_impl i = *static_cast<mc_lean_impl*>(p);
    if (i) mc_lean_retain(i);
    return at::Tensor(i, at::Tensor::adopt_t{});
  }
};
template <typename T, char C>
struct ScalarArg {
  static constexpr char code = C;
  using Stored = T;
  static Stored get(void* p) { return *static_cast<T*>(p); }
};
template <>
struct Arg<double> : ScalarArg<double, 'd'> {};
template <>
struct Arg<float> : ScalarArg<float, 'f'> {};
template <>
struct Arg<int64_t> : ScalarArg<int64_t, 'l'> {};
template <>
struct Arg<int> : ScalarArg<int, 'i'> {};
template <>
struct Arg<bool> : ScalarArg<bool, 'b'> {};
#if !defined(MOOREEVAL_LEAN_NO_STRING)
template <>
struct Arg<std::string> : ScalarArg<std::string, 's'> {};
#endif
template <>
struct Arg<std::vector<int64_t>> : ScalarArg<std::vector<int64_t>, 'L'> {};
template <>
struct Arg<c10::IntArrayRef> {
  static constexpr char code = 'A';
  using Stored = c10::IntArrayRef;  // views the shim's vector, alive for the call
  static Stored get(void* p) { return c10::IntArrayRef(*static_cast<std::vector<int64_t>*>(p)); }
};
template <>
struct Arg<std::vector<at::Tensor>> {
  static constexpr char code = 'V';
  using Stored = std::vector<at::Tensor>;
  static Stored get(void* p) {
    Stored out;
    for (mc_lean_impl i : *static_cast<std::vector<mc_lean_impl>*>(p))
      out.push_back(Arg<at::Tensor>::get(&i));
    return out;
  }
};

template <typename T>
struct Ret;  // unsupported return type: no definition
template <>
struct Ret<void> {
  static constexpr char code = 'v';
};
template <>
struct Ret<at::Tensor> {
  static constexpr char code = 'T';
  static void store(at::Tensor t, Result* r) { r->kind = 'T', r->tensor = t.release(); }
};
template <>
struct Ret<std::vector<at::Tensor>> {
  static constexpr char code = 'V';
  static void store(std::vector<at::Tensor> v, Result* r) {
    r->kind = 'V';
    for (auto& t : v) r->tensors.push_back(t.release());
  }
};
template <typename... Ts>
struct Ret<std::tuple<Ts...>> {
  static_assert((std::is_same_v<Ts, at::Tensor> && ...), "lean bindings return tuples of tensors only");
  static constexpr char code = 'U';
  static void store(std::tuple<Ts...> v, Result* r) {
    r->kind = 'U';
    std::apply([&](auto&... t) { (r->tensors.push_back(t.release()), ...); }, v);
  }
};
template <>
struct Ret<double> {
  static constexpr char code = 'd';
  static void store(double v, Result* r) { r->kind = 'd', r->d = v; }
};
template <>
struct Ret<float> {
  static constexpr char code = 'd';
  static void store(float v, Result* r) { r->kind = 'd', r->d = v; }
};
template <>
struct Ret<int64_t> {
  static constexpr char code = 'l';
  static void store(int64_t v, Result* r) { r->kind = 'l', r->l = v; }
};
template <>
struct Ret<int> {
  static constexpr char code = 'l';
  static void store(int v, Result* r) { r->kind = 'l', r->l = v; }
};
template <>
struct Ret<bool> {
  static constexpr char code = 'b';
  static void store(bool v, Result* r) { r->kind = 'b', r->l = v; }
};

template <typename T>
using Bare = std::remove_cv_t<std::remove_reference_t<T>>;

template <typename R, typename... A>
const char* signature(R (*)(A...)) {
  static const char s[] = {Ret<Bare<R>>::code, ':', Arg<Bare<A>>::code..., '\0'};
  return s;
}
template <typename R, typename... A>
const char* signature(R (*)(A...) noexcept) {
  static const char s[] = {Ret<Bare<R>>::code, ':', Arg<Bare<A>>::code..., '\0'};
  return s;
}

template <typename F, typename R, typename... A, std::size_t... I>
void call_impl(F fn, void** args, Result* out, std::index_sequence<I...>) {
  std::tuple<typename Arg<Bare<A>>::Stored...> vals{Arg<Bare<A>>::get(args[I])...};
  (void)args;
  if constexpr (std::is_void_v<R>) {
    fn(std::forward<A>(std::get<I>(vals))...);
    out->kind = 'v';
  } else {
    Ret<Bare<R>>::store(fn(std::forward<A>(std::get<I>(vals))...), out);
  }
}
template <typename R, typename... A>
void call(R (*fn)(A...), void** args, Result* out) {
  call_impl<R (*)(A...), R, A...>(fn, args, out, std::index_sequence_for<A...>{});
}
template <typename R, typename... A>
void call(R (*fn)(A...) noexcept, void** args, Result* out) {
  call_impl<R (*)(A...) noexcept, R, A...>(fn, args, out, std::index_sequence_for<A...>{});
}

}  // namespace mooreeval_lean::binding

#define MOOREEVAL_LEAN_EXPORT(fn)                                                           \
  extern "C" __attribute__((visibility("default"))) const char* mooreeval_lean_sig_##fn() { \
    return ::mooreeval_lean::binding::signature(&fn);                                       \
  }                                                                                         \
  extern "C" __attribute__((visibility("default"))) void mooreeval_lean_call_##fn(          \
      void** args, ::mooreeval_lean::binding::Result* out) {                                \
    ::mooreeval_lean::binding::call(&fn, args, out);                                        \
  }
