// Internal to rdrr/: the parts of validate_manifest() that live in their own files.
#pragma once

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::internal {

Status validate_weights(const Manifest& m);  // validate_tensors.cpp: shards, tensors, placement, counts
Status validate_graph(const Manifest& m, const ExecutionGraph& g);  // validate_graph.cpp

}  // namespace rdrr::internal
