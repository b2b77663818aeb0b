#include "runtime/instance.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/vk_status.h"

namespace rdrr::runtime {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layer_available(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) < 0) return false;
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

bool instance_extension_available(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data()) < 0) return false;
  for (const VkExtensionProperties& e : exts) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

}  // namespace

InstanceOptions instance_options_from_env() {
  InstanceOptions o;
  const char* v = std::getenv("RDRR_VK_VALIDATION");
  o.validation = v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
  return o;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<Instance*>(user);
  const char* msg = data != nullptr && data->pMessage != nullptr ? data->pMessage : "(no message)";
  if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0) {
    self->validation_errors_.fetch_add(1);
    std::lock_guard<std::mutex> lock(self->message_mu_);
    self->last_error_ = msg;
  }
  std::fprintf(stderr, "rdrr vulkan validation: %s\n", msg);
  return VK_FALSE;
}

std::string Instance::last_validation_error() const {
  std::lock_guard<std::mutex> lock(message_mu_);
  return last_error_;
}

Result<std::unique_ptr<Instance>> Instance::create(const InstanceOptions& opts) {
  std::unique_ptr<Instance> inst(new Instance());
  uint32_t loader_version = VK_API_VERSION_1_0;
  RDRR_VK_RETURN_IF_ERROR(vkEnumerateInstanceVersion(&loader_version), "vkEnumerateInstanceVersion");
  if (loader_version < VK_API_VERSION_1_2) {
    return error(StatusCode::kUnsupported, "Vulkan loader supports " + std::to_string(VK_API_VERSION_MAJOR(loader_version)) +
                                               "." + std::to_string(VK_API_VERSION_MINOR(loader_version)) +
                                               ", rdrr needs 1.2");
  }
  inst->api_version_ = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;

  auto app = vk_init<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "rdrr";
  app.pEngineName = "rdrr";
  app.apiVersion = inst->api_version_;
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  const bool want_validation = opts.validation;
  bool debug_utils = false;
  if (want_validation) {
    if (layer_available(kValidationLayer)) {
      layers.push_back(kValidationLayer);
    } else {
      std::fprintf(stderr, "rdrr: RDRR_VK_VALIDATION set but %s is not installed (vulkan-validationlayers)\n",
                   kValidationLayer);
    }
    debug_utils = !layers.empty() && instance_extension_available(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  auto ci = vk_init<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkInstance raw = VK_NULL_HANDLE;
  RDRR_VK_RETURN_IF_ERROR(vkCreateInstance(&ci, nullptr, &raw), "vkCreateInstance");
  inst->instance_ = UniqueInstance(raw);

  if (debug_utils) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(raw, "vkCreateDebugUtilsMessengerEXT"));
    if (create_messenger != nullptr) {
      auto mi = vk_init<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
      mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      mi.pfnUserCallback = &Instance::on_message;
      mi.pUserData = inst.get();
      RDRR_VK_RETURN_IF_ERROR(create_messenger(raw, &mi, nullptr, &inst->messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
  }

  uint32_t n = 0;
  RDRR_VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(raw, &n, nullptr), "vkEnumeratePhysicalDevices(count)");
  inst->physical_.resize(n);
  RDRR_VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(raw, &n, inst->physical_.data()), "vkEnumeratePhysicalDevices");
  inst->physical_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Result<DeviceCaps> caps = probe_caps(raw, inst->physical_[i], i);
    if (!caps.ok()) return caps.status().context("probing physical device " + std::to_string(i));
    inst->caps_.push_back(std::move(caps).value());
  }
  return inst;
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_.get(), "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance_.get(), messenger_, nullptr);
  }
}

std::vector<DeviceDesc> Instance::device_descs() const {
  std::vector<DeviceDesc> out;
  for (const DeviceCaps& c : caps_) out.push_back(c.desc);
  return out;
}

}  // namespace rdrr::runtime
