// Internal entry points of the sd pack's parts, called once by sd_ggml_register_extensions.
#pragma once

namespace sd {

// Each registers its operators, CPU kernels and CPU fusion rules; false after setting the error
// (ggml_ext_set_error / the registry's message) when a registration fails.
bool register_rope();  // common/rope_ops.cpp + cpu/rope.cpp
bool register_int8();  // common/int8_ops.cpp + cpu/int8.cpp

}  // namespace sd
