// AT_DISPATCH_* for the type lists that need no half-precision class: a switch on the
// scalar type that binds `scalar_t` and calls the lambda, torch's own structure and error.
#pragma once

namespace mooreeval_lean {
inline c10::ScalarType dispatch_type(c10::ScalarType s) {
  return s;
}
inline c10::ScalarType dispatch_type(caffe2::TypeMeta m) {
  return m.toScalarType();
}
inline c10::ScalarType dispatch_type(const at::DeprecatedTypeProperties& t) {
  return t.scalarType();
}
}  // namespace mooreeval_lean

#define MOOREEVAL_LEAN_DISPATCH_CASE(ENUM, CTYPE, ...) \
  case ENUM: {                                         \
    using scalar_t [[maybe_unused]] = CTYPE;           \
    return __VA_ARGS__();                              \
  }

#define MOOREEVAL_LEAN_DISPATCH_SWITCH(TYPE, NAME, CASES)                                                \
  [&] {                                                                                                  \
    const ::c10::ScalarType _st = ::mooreeval_lean::dispatch_type(TYPE);                                 \
    constexpr const char* at_dispatch_name = NAME;                                                       \
    switch (_st) {                                                                                       \
      CASES                                                                                              \
      default:                                                                                           \
        mc_lean_not_implemented(__func__, __FILE__, static_cast<uint32_t>(__LINE__),                     \
                                ::mooreeval_lean::str('"', at_dispatch_name, "\" not implemented for '", \
                                                      ::c10::toString(_st), "'")                         \
                                    .c_str());                                                           \
    }                                                                                                    \
  }()

#define MOOREEVAL_LEAN_FLOATING_CASES(...)                                     \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Double, double, __VA_ARGS__) \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Float, float, __VA_ARGS__)
#define MOOREEVAL_LEAN_INTEGRAL_CASES(...)                                    \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Byte, uint8_t, __VA_ARGS__) \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Char, int8_t, __VA_ARGS__)  \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Int, int32_t, __VA_ARGS__)  \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Long, int64_t, __VA_ARGS__) \
  MOOREEVAL_LEAN_DISPATCH_CASE(::c10::ScalarType::Short, int16_t, __VA_ARGS__)

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  MOOREEVAL_LEAN_DISPATCH_SWITCH(TYPE, NAME, MOOREEVAL_LEAN_FLOATING_CASES(__VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
  MOOREEVAL_LEAN_DISPATCH_SWITCH(TYPE, NAME, MOOREEVAL_LEAN_INTEGRAL_CASES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
  MOOREEVAL_LEAN_DISPATCH_SWITCH(              \
      TYPE, NAME, MOOREEVAL_LEAN_INTEGRAL_CASES(__VA_ARGS__) MOOREEVAL_LEAN_FLOATING_CASES(__VA_ARGS__))
