#include "runtime/device_select.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

namespace rdrr::runtime {
namespace {

int kind_rank(DeviceKind k) {
  switch (k) {
    case DeviceKind::kDiscrete: return 0;
    case DeviceKind::kIntegrated: return 1;
    case DeviceKind::kVirtual: return 2;
    case DeviceKind::kCpu: return 3;
    case DeviceKind::kOther: return 4;
  }
  return 5;
}

std::string version_string(uint32_t v) {
  return std::to_string(v >> 22) + "." + std::to_string((v >> 12) & 0x3ffu) + "." + std::to_string(v & 0xfffu);
}

// Empty when usable, else why not.
std::string unusable_reason(const DeviceDesc& d) {
  if (d.api_version < kMinApiVersion) return "Vulkan " + version_string(d.api_version) + " < required 1.2";
  if (!d.has_compute_queue) return "no compute queue family";
  return {};
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<uint32_t> parse_index(std::string_view s) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<uint32_t> check_named(const DeviceDesc& d, std::string_view spec) {
  const std::string why = unusable_reason(d);
  if (!why.empty()) {
    return error(StatusCode::kUnsupported, "RDRR_DEVICE=" + std::string(spec) + " selects device " +
                                               std::to_string(d.index) + " '" + d.name + "': " + why);
  }
  return d.index;
}

}  // namespace

std::string_view device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::kDiscrete: return "discrete";
    case DeviceKind::kIntegrated: return "integrated";
    case DeviceKind::kVirtual: return "virtual";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kOther: return "other";
  }
  return "?";
}

std::string describe_devices(std::span<const DeviceDesc> devices) {
  std::string out;
  for (const DeviceDesc& d : devices) {
    if (!out.empty()) out += "; ";
    out += std::to_string(d.index) + ": '" + d.name + "' " + std::string(device_kind_name(d.kind)) + " Vulkan " +
           version_string(d.api_version);
  }
  return out.empty() ? "(none)" : out;
}

Result<uint32_t> select_device(std::span<const DeviceDesc> devices, std::string_view override_spec) {
  if (devices.empty()) return error(StatusCode::kNotFound, "no Vulkan physical devices found");
  if (!override_spec.empty()) {
    if (std::optional<uint32_t> idx = parse_index(override_spec)) {
      for (const DeviceDesc& d : devices) {
        if (d.index == *idx) return check_named(d, override_spec);
      }
      return error(StatusCode::kNotFound, "RDRR_DEVICE=" + std::string(override_spec) + ": no device with index " +
                                              std::to_string(*idx) + "; devices: " + describe_devices(devices));
    }
    const std::string needle = lower(override_spec);
    for (const DeviceDesc& d : devices) {
      if (lower(d.name).find(needle) != std::string::npos) return check_named(d, override_spec);
    }
    return error(StatusCode::kNotFound, "RDRR_DEVICE=" + std::string(override_spec) +
                                            ": no device name contains it; devices: " + describe_devices(devices));
  }
  const DeviceDesc* best = nullptr;
  for (const DeviceDesc& d : devices) {
    if (!unusable_reason(d).empty()) continue;
    if (best == nullptr || kind_rank(d.kind) < kind_rank(best->kind) ||
        (kind_rank(d.kind) == kind_rank(best->kind) && d.index < best->index)) {
      best = &d;
    }
  }
  if (best == nullptr) {
    std::string why;
    for (const DeviceDesc& d : devices) {
      if (!why.empty()) why += "; ";
      why += std::to_string(d.index) + " '" + d.name + "': " + unusable_reason(d);
    }
    return error(StatusCode::kUnsupported, "no usable Vulkan device: " + why);
  }
  return best->index;
}

}  // namespace rdrr::runtime
