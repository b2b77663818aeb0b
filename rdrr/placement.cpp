#include "rdrr/placement.h"

#include <cstdio>

namespace rdrr {

std::string shard_filename(uint32_t index) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "shard_%05u.bin", index);
  return buf;
}

}  // namespace rdrr
