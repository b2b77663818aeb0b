// SafeTensorsModel: one name -> tensor view across the shards of an HF checkpoint folder.
#include <algorithm>
#include <map>
#include <set>
#include <system_error>

#include "rdrr/json_strict.h"
#include "convert/safetensors.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kSingleFile = "model.safetensors";
constexpr std::string_view kIndexFile = "model.safetensors.index.json";

// Plain file name inside the folder: no directories, no traversal.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

Result<std::string> read_small_file(const fs::path& path) {
  RDRR_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  constexpr uint64_t kMaxIndexBytes = 256ull << 20;
  if (f.size_bytes() > kMaxIndexBytes) {
    return error(StatusCode::kParse, path.string() + ": " + std::to_string(f.size_bytes()) + " bytes, over the " +
                                         std::to_string(kMaxIndexBytes) + "-byte limit for an index");
  }
  return std::string(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size());
}

// weight_map of index.json: tensor name -> shard file name.
Result<std::map<std::string, std::string>> read_weight_map(const fs::path& index_path) {
  const std::string where = index_path.string();
  RDRR_ASSIGN_OR_RETURN(std::string text, read_small_file(index_path));
  RDRR_ASSIGN_OR_RETURN(json j, parse_json_strict(text, where));
  if (!j.is_object()) return error(StatusCode::kParse, where + ": not a JSON object");
  if (!j.contains("weight_map")) return error(StatusCode::kSchema, where + ": field 'weight_map': missing");
  const json& wm = j["weight_map"];
  if (!wm.is_object()) return error(StatusCode::kSchema, where + ": field 'weight_map': expected an object");
  if (j.contains("metadata") && !j["metadata"].is_object()) {
    return error(StatusCode::kSchema, where + ": field 'metadata': expected an object");
  }
  std::map<std::string, std::string> out;
  for (const auto& [tensor, file] : wm.items()) {
    if (!file.is_string()) {
      return error(StatusCode::kSchema, where + ": weight_map['" + tensor + "']: expected a file name string, got " +
                                            json_brief(file));
    }
    const std::string& name = file.get_ref<const std::string&>();
    if (!is_plain_file_name(name)) {
      return error(StatusCode::kValidation, where + ": weight_map['" + tensor + "']: file name '" + name +
                                                "' is not a plain file name in the folder");
    }
    out.emplace(tensor, name);
  }
  if (out.empty()) return error(StatusCode::kValidation, where + ": weight_map is empty");
  return out;
}

}  // namespace

Result<SafeTensorsModel> SafeTensorsModel::open(const fs::path& path) {
  SafeTensorsModel model;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    RDRR_ASSIGN_OR_RETURN(SafeTensorsFile f, SafeTensorsFile::open(path));
    model.files_.push_back(std::move(f));
    RDRR_RETURN_IF_ERROR(model.build_index());
    return model;
  }
  if (!fs::is_directory(path, ec)) {
    return error(StatusCode::kNotFound, path.string() + ": not a file or folder");
  }
  const fs::path single = path / kSingleFile;
  const fs::path index = path / kIndexFile;
  if (fs::exists(single, ec)) {
    RDRR_ASSIGN_OR_RETURN(SafeTensorsFile f, SafeTensorsFile::open(single));
    model.files_.push_back(std::move(f));
    RDRR_RETURN_IF_ERROR(model.build_index());
    return model;
  }
  if (!fs::exists(index, ec)) {
    return error(StatusCode::kNotFound, path.string() + ": neither " + std::string(kSingleFile) + " nor " +
                                            std::string(kIndexFile) + " found");
  }
  RDRR_ASSIGN_OR_RETURN(auto weight_map, read_weight_map(index));
  std::set<std::string> names;
  for (const auto& [tensor, file] : weight_map) names.insert(file);
  std::map<std::string, int> shard_of_file;
  for (const std::string& name : names) {  // sorted: deterministic shard order
    Result<SafeTensorsFile> f = SafeTensorsFile::open(path / name);
    if (!f.ok()) return f.status().context(index.string() + ": shard '" + name + "'");
    shard_of_file[name] = static_cast<int>(model.files_.size());
    model.files_.push_back(std::move(f).value());
  }
  RDRR_RETURN_IF_ERROR(model.build_index());
  const std::string where = index.string();
  for (const auto& [tensor, file] : weight_map) {
    const int shard = model.shard_of(tensor);
    if (shard < 0) {
      return error(StatusCode::kValidation, where + ": tensor '" + tensor + "' mapped to '" + file +
                                                "' is not in that file");
    }
    if (shard != shard_of_file[file]) {
      return error(StatusCode::kValidation, where + ": tensor '" + tensor + "' mapped to '" + file +
                                                "' is in '" + model.files_[static_cast<size_t>(shard)].path().filename().string() + "' instead");
    }
  }
  for (const TensorView& t : model.tensors_) {
    if (!weight_map.contains(t.name)) {
      const std::string file = model.files_[static_cast<size_t>(model.shard_of(t.name))].path().filename().string();
      return error(StatusCode::kValidation, where + ": tensor '" + t.name + "' in '" + file +
                                                "' is not listed in weight_map");
    }
  }
  return model;
}

Status SafeTensorsModel::build_index() {
  std::vector<std::pair<const TensorView*, int>> all;
  for (size_t s = 0; s < files_.size(); ++s) {
    for (const TensorView& t : files_[s].tensors()) all.emplace_back(&t, static_cast<int>(s));
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first->name < b.first->name; });
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].first->name == all[i - 1].first->name) {
      return error(StatusCode::kValidation,
                   "tensor '" + all[i].first->name + "' appears in two files: '" +
                       files_[static_cast<size_t>(all[i - 1].second)].path().filename().string() + "' and '" +
                       files_[static_cast<size_t>(all[i].second)].path().filename().string() + "'");
    }
  }
  tensors_.clear();
  tensor_shard_.clear();
  for (const auto& [t, s] : all) {
    tensors_.push_back(*t);
    tensor_shard_.push_back(s);
  }
  return Status::Ok();
}

const TensorView* SafeTensorsModel::find(std::string_view name) const {
  const auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                                   [](const TensorView& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

Result<const TensorView*> SafeTensorsModel::get(std::string_view name) const {
  if (const TensorView* t = find(name)) return t;
  return error(StatusCode::kNotFound, "no tensor '" + std::string(name) + "' in the checkpoint");
}

int SafeTensorsModel::shard_of(std::string_view name) const {
  const TensorView* t = find(name);
  return t == nullptr ? -1 : tensor_shard_[static_cast<size_t>(t - tensors_.data())];
}

}  // namespace rdrr::convert
