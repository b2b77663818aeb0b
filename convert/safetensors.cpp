#include "convert/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <optional>

#include "rdrr/json_strict.h"

namespace rdrr::convert {
namespace {

using nlohmann::json;

struct DtypeInfo {
  std::string_view name;
  uint64_t size_bytes;
  std::optional<quant::DType> dtype;  // nullopt: recognised but unsupported
};

constexpr std::array<DtypeInfo, 19> kDtypes = {{
    {"F32", 4, quant::DType::kF32}, {"F16", 2, quant::DType::kF16}, {"BF16", 2, quant::DType::kBF16},
    {"F64", 8, std::nullopt},       {"I64", 8, std::nullopt},       {"I32", 4, std::nullopt},
    {"I16", 2, std::nullopt},       {"I8", 1, std::nullopt},        {"U64", 8, std::nullopt},
    {"U32", 4, std::nullopt},       {"U16", 2, std::nullopt},       {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt},      {"F8_E5M2", 1, std::nullopt},   {"F8_E4M3", 1, std::nullopt},
    {"F8_E8M0", 1, std::nullopt},   {"F4", 1, std::nullopt},        {"F6_E2M3", 1, std::nullopt},
    {"C64", 8, std::nullopt},
}};

uint64_t read_u64_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

// One parsed header entry before the coverage check.
struct Entry {
  TensorView view;
  uint64_t begin = 0;
  uint64_t end = 0;
};

Status field_error(StatusCode code, const std::string& tensor, std::string_view field, const std::string& what) {
  return error(code, "tensor '" + tensor + "': field '" + std::string(field) + "': " + what);
}

Result<quant::DType> parse_entry_dtype(const std::string& name, const json& j, uint64_t* elem_bytes) {
  if (!j.is_string()) return field_error(StatusCode::kSchema, name, "dtype", "expected a string, got " + json_brief(j));
  const std::string& s = j.get_ref<const std::string&>();
  for (const DtypeInfo& d : kDtypes) {
    if (d.name != s) continue;
    if (!d.dtype) {
      return field_error(StatusCode::kUnsupported, name, "dtype", "unsupported dtype " + s + " (accepted: F32, F16, BF16)");
    }
    *elem_bytes = d.size_bytes;
    return *d.dtype;
  }
  return field_error(StatusCode::kSchema, name, "dtype", "unknown dtype '" + s + "'");
}

Status parse_entry_shape(const std::string& name, const json& j, std::vector<int64_t>* shape, uint64_t* numel) {
  if (!j.is_array()) return field_error(StatusCode::kSchema, name, "shape", "expected a list, got " + json_brief(j));
  uint64_t n = 1;
  for (const json& d : j) {
    if (!d.is_number_unsigned()) {
      return field_error(StatusCode::kSchema, name, "shape", "expected non-negative integers, got " + json_brief(j));
    }
    const uint64_t v = d.get<uint64_t>();
    if (__builtin_mul_overflow(n, v, &n) || n > static_cast<uint64_t>(INT64_MAX) ||
        v > static_cast<uint64_t>(INT64_MAX)) {
      return field_error(StatusCode::kValidation, name, "shape", "element count overflows: " + json_brief(j));
    }
    shape->push_back(static_cast<int64_t>(v));
  }
  *numel = n;
  return Status::Ok();
}

Status parse_entry_offsets(const std::string& name, const json& j, uint64_t data_bytes, Entry* e) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_unsigned() || !j[1].is_number_unsigned()) {
    return field_error(StatusCode::kSchema, name, "data_offsets",
                       "expected [begin, end] non-negative integers, got " + json_brief(j));
  }
  e->begin = j[0].get<uint64_t>();
  e->end = j[1].get<uint64_t>();
  if (e->begin > e->end) {
    return field_error(StatusCode::kValidation, name, "data_offsets",
                       "begin " + std::to_string(e->begin) + " > end " + std::to_string(e->end));
  }
  if (e->end > data_bytes) {
    return field_error(StatusCode::kValidation, name, "data_offsets",
                       "end " + std::to_string(e->end) + " beyond the data section of " + std::to_string(data_bytes) +
                           " bytes");
  }
  return Status::Ok();
}

Result<Entry> parse_entry(const std::string& name, const json& j, std::span<const std::byte> data) {
  if (!j.is_object()) {
    return error(StatusCode::kSchema, "tensor '" + name + "': expected an object, got " + json_brief(j));
  }
  for (const auto& [key, unused] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return field_error(StatusCode::kSchema, name, key, "unknown field");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(key)) return field_error(StatusCode::kSchema, name, key, "missing");
  }
  Entry e;
  e.view.name = name;
  uint64_t elem_bytes = 0;
  RDRR_ASSIGN_OR_RETURN(e.view.dtype, parse_entry_dtype(name, j["dtype"], &elem_bytes));
  uint64_t numel = 0;
  RDRR_RETURN_IF_ERROR(parse_entry_shape(name, j["shape"], &e.view.shape, &numel));
  RDRR_RETURN_IF_ERROR(parse_entry_offsets(name, j["data_offsets"], data.size(), &e));
  uint64_t expect_bytes = 0;
  if (__builtin_mul_overflow(numel, elem_bytes, &expect_bytes)) {
    return field_error(StatusCode::kValidation, name, "shape", "byte size overflows");
  }
  if (e.end - e.begin != expect_bytes) {
    return field_error(StatusCode::kValidation, name, "data_offsets",
                       "spans " + std::to_string(e.end - e.begin) + " bytes, expected numel " + std::to_string(numel) +
                           " * " + std::to_string(elem_bytes) + " = " + std::to_string(expect_bytes));
  }
  e.view.bytes = data.subspan(e.begin, e.end - e.begin);
  return e;
}

Status parse_metadata(const json& j, std::map<std::string, std::string, std::less<>>* out) {
  if (!j.is_object()) return error(StatusCode::kSchema, "__metadata__: expected an object, got " + json_brief(j));
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      return error(StatusCode::kSchema, "__metadata__: key '" + key + "': expected a string value, got " + json_brief(value));
    }
    out->emplace(key, value.get<std::string>());
  }
  return Status::Ok();
}

// The tensors must tile [0, data_bytes) exactly, as the reference library requires.
Status check_coverage(const std::vector<Entry>& entries, uint64_t data_bytes) {
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(entries[a].begin, entries[a].end) < std::tie(entries[b].begin, entries[b].end);
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (size_t i : order) {
    const Entry& e = entries[i];
    if (e.begin < covered) {
      return error(StatusCode::kValidation, "tensor '" + e.view.name + "' [" + std::to_string(e.begin) + ", " +
                                                std::to_string(e.end) + ") overlaps tensor '" + prev->view.name +
                                                "' ending at " + std::to_string(covered));
    }
    if (e.begin > covered) {
      return error(StatusCode::kValidation, "hole in the data section: bytes [" + std::to_string(covered) + ", " +
                                                std::to_string(e.begin) + ") before tensor '" + e.view.name +
                                                "' belong to no tensor");
    }
    covered = e.end;
    prev = &e;
  }
  if (covered != data_bytes) {
    return error(StatusCode::kValidation, "data section has " + std::to_string(data_bytes) +
                                              " bytes but the tensors cover only " + std::to_string(covered));
  }
  return Status::Ok();
}

}  // namespace

Result<SafeTensorsFile> SafeTensorsFile::open(const std::filesystem::path& path) {
  SafeTensorsFile st;
  RDRR_ASSIGN_OR_RETURN(st.file_, MappedFile::open(path));
  const std::string where = path.string();
  const std::span<const std::byte> bytes = st.file_.bytes();
  if (bytes.size() < 8) {
    return error(StatusCode::kParse, where + ": file has " + std::to_string(bytes.size()) +
                                         " bytes, shorter than the 8-byte header length");
  }
  const uint64_t header_bytes = read_u64_le(bytes.data());
  if (header_bytes > kSafeTensorsMaxHeaderBytes) {
    return error(StatusCode::kParse, where + ": header length " + std::to_string(header_bytes) + " exceeds the limit " +
                                         std::to_string(kSafeTensorsMaxHeaderBytes));
  }
  if (header_bytes > bytes.size() - 8) {
    return error(StatusCode::kParse, where + ": header length " + std::to_string(header_bytes) +
                                         " beyond the file (" + std::to_string(bytes.size() - 8) +
                                         " bytes after the length field)");
  }
  st.data_offset_bytes_ = 8 + header_bytes;
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes);
  if (header.empty() || header.front() != '{') {  // as the reference library: the header starts with '{'
    return error(StatusCode::kParse, where + ": header is not a JSON object (does not start with '{')");
  }
  RDRR_ASSIGN_OR_RETURN(json j, parse_json_strict(header, where + ": header"));
  if (!j.is_object()) {
    return error(StatusCode::kParse, where + ": header is not a JSON object (got " + std::string(j.type_name()) + ")");
  }
  const std::span<const std::byte> data = bytes.subspan(st.data_offset_bytes_);
  std::vector<Entry> entries;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      RDRR_RETURN_IF_ERROR(parse_metadata(value, &st.metadata_).context(where));
      continue;
    }
    Result<Entry> e = parse_entry(key, value, data);
    if (!e.ok()) return e.status().context(where);
    entries.push_back(std::move(e).value());
  }
  RDRR_RETURN_IF_ERROR(check_coverage(entries, data.size()).context(where));
  st.tensors_.reserve(entries.size());
  for (Entry& e : entries) st.tensors_.push_back(std::move(e.view));
  std::sort(st.tensors_.begin(), st.tensors_.end(),
            [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  return st;
}

const TensorView* SafeTensorsFile::find(std::string_view name) const {
  const auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                                   [](const TensorView& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

Result<const TensorView*> SafeTensorsFile::get(std::string_view name) const {
  if (const TensorView* t = find(name)) return t;
  return error(StatusCode::kNotFound, path().string() + ": no tensor '" + std::string(name) + "'");
}

}  // namespace rdrr::convert
