// Layer templating of execution-graph weight refs (rdrr/SPEC.md section 9): in the prefill and decode
// phases "{L}" in a weight ref stands for the layer index.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rdrr {

inline constexpr std::string_view kLayerToken = "{L}";

// `ref` with every "{L}" replaced by `layer` in decimal.
std::string substitute_layer(std::string_view ref, uint32_t layer);

}  // namespace rdrr
