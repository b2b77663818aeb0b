// Internal to rdrr/: inference.execution <-> ExecutionGraph, used by manifest_json_{read,write}.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr {

Status read_execution_graph(const nlohmann::json& v, const std::string& path, ExecutionGraph& g);
nlohmann::json execution_graph_to_json(const ExecutionGraph& g);

}  // namespace rdrr
