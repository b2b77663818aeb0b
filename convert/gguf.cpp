#include "convert/gguf.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <map>
#include <numeric>

namespace rdrr::convert {
namespace {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;  // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // 1-byte name, one dim
constexpr uint32_t kMaxDims = 4;

std::string hex_bytes(std::span<const std::byte> b) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (std::byte x : b) {
    if (!out.empty()) out += ' ';
    out += kDigits[static_cast<unsigned>(x) >> 4];
    out += kDigits[static_cast<unsigned>(x) & 15u];
  }
  return out;
}

// Bounds-checked little-endian reads over the mapping; every failure is a kParse "truncated" error.
class Cursor {
 public:
  explicit Cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  Status need(uint64_t n, std::string_view what) const {
    if (n <= remaining()) return Status::Ok();
    return error(StatusCode::kParse, "truncated: " + std::string(what) + " needs " + std::to_string(n) +
                                         " bytes at offset " + std::to_string(pos_) + ", only " +
                                         std::to_string(remaining()) + " left");
  }
  template <typename T>
  Status read(T* v, std::string_view what) {
    RDRR_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  std::span<const std::byte> take(uint64_t n) {  // caller checked need(n)
    const auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  Status read_string(std::string* s, std::string_view what) {
    uint64_t len = 0;
    RDRR_RETURN_IF_ERROR(read(&len, std::string(what) + " length"));
    RDRR_RETURN_IF_ERROR(need(len, std::string(what) + " of length " + std::to_string(len)));
    const auto b = take(len);
    s->assign(reinterpret_cast<const char*>(b.data()), b.size());
    return Status::Ok();
  }

 private:
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
};

Result<GgufValueType> read_value_type(Cursor& c, std::string_view what) {
  uint32_t id = 0;
  RDRR_RETURN_IF_ERROR(c.read(&id, what));
  if (id >= kGgufValueTypeCount) {
    return error(StatusCode::kSchema, "unknown " + std::string(what) + " " + std::to_string(id) + " (known: 0..12)");
  }
  return static_cast<GgufValueType>(id);
}

Status check_bool(uint8_t b, std::string_view what) {
  if (b <= 1) return Status::Ok();
  return error(StatusCode::kValidation, std::string(what) + ": bool value " + std::to_string(b) + " is not 0 or 1");
}

Status read_array(Cursor& c, GgufArray* a) {
  RDRR_ASSIGN_OR_RETURN(a->elem_type, read_value_type(c, "array element type"));
  if (a->elem_type == GgufValueType::kArray) {
    return error(StatusCode::kUnsupported, "nested arrays are not supported");
  }
  RDRR_RETURN_IF_ERROR(c.read(&a->count, "array count"));
  const uint64_t min_elem_bytes = a->elem_type == GgufValueType::kString ? 8 : gguf_value_type_size(a->elem_type);
  if (a->count > c.remaining() / min_elem_bytes) {
    return error(StatusCode::kParse, "truncated: array of " + std::to_string(a->count) + " " +
                                         std::string(gguf_value_type_name(a->elem_type)) + " elements needs at least " +
                                         std::to_string(min_elem_bytes) + " bytes each at offset " +
                                         std::to_string(c.pos()) + ", only " + std::to_string(c.remaining()) +
                                         " left");
  }
  if (a->elem_type == GgufValueType::kString) {
    // Grows with the strings actually read (each costs >= 8 file bytes), never with the claimed count.
    a->strings.reserve(std::min<uint64_t>(a->count, 1u << 16));
    for (uint64_t i = 0; i < a->count; ++i) {
      RDRR_RETURN_IF_ERROR(c.read_string(&a->strings.emplace_back(), "array element " + std::to_string(i)));
    }
    return Status::Ok();
  }
  const auto raw = c.take(a->count * min_elem_bytes);
  a->raw.assign(raw.begin(), raw.end());
  if (a->elem_type == GgufValueType::kBool) {
    for (uint64_t i = 0; i < a->count; ++i) {
      RDRR_RETURN_IF_ERROR(check_bool(static_cast<uint8_t>(raw[i]), "array element " + std::to_string(i)));
    }
  }
  return Status::Ok();
}

template <typename Stored, typename Wire>
Status read_scalar(Cursor& c, GgufValue* v) {
  Wire w{};
  RDRR_RETURN_IF_ERROR(c.read(&w, std::string(gguf_value_type_name(v->type)) + " value"));
  v->data = static_cast<Stored>(w);
  return Status::Ok();
}

Status read_value(Cursor& c, GgufValue* v) {
  switch (v->type) {
    case GgufValueType::kU8: return read_scalar<uint64_t, uint8_t>(c, v);
    case GgufValueType::kI8: return read_scalar<int64_t, int8_t>(c, v);
    case GgufValueType::kU16: return read_scalar<uint64_t, uint16_t>(c, v);
    case GgufValueType::kI16: return read_scalar<int64_t, int16_t>(c, v);
    case GgufValueType::kU32: return read_scalar<uint64_t, uint32_t>(c, v);
    case GgufValueType::kI32: return read_scalar<int64_t, int32_t>(c, v);
    case GgufValueType::kU64: return read_scalar<uint64_t, uint64_t>(c, v);
    case GgufValueType::kI64: return read_scalar<int64_t, int64_t>(c, v);
    case GgufValueType::kF32: return read_scalar<double, float>(c, v);
    case GgufValueType::kF64: return read_scalar<double, double>(c, v);
    case GgufValueType::kBool: {
      uint8_t b = 0;
      RDRR_RETURN_IF_ERROR(c.read(&b, "bool value"));
      RDRR_RETURN_IF_ERROR(check_bool(b, "value"));
      v->data = b != 0;
      return Status::Ok();
    }
    case GgufValueType::kString: {
      std::string s;
      RDRR_RETURN_IF_ERROR(c.read_string(&s, "string value"));
      v->data = std::move(s);
      return Status::Ok();
    }
    case GgufValueType::kArray: {
      GgufArray a;
      RDRR_RETURN_IF_ERROR(read_array(c, &a));
      v->data = std::move(a);
      return Status::Ok();
    }
  }
  return error(StatusCode::kInternal, "unhandled value type");
}

// Reads one tensor info (name, dims, type, offset); the byte span is resolved later.
Status read_tensor_info(Cursor& c, GgufTensor* t) {
  RDRR_RETURN_IF_ERROR(c.read_string(&t->name, "name"));
  if (t->name.empty()) return error(StatusCode::kValidation, "empty tensor name");
  uint32_t n_dims = 0;
  RDRR_RETURN_IF_ERROR(c.read(&n_dims, "n_dims"));
  if (n_dims == 0 || n_dims > kMaxDims) {
    return error(StatusCode::kValidation, "n_dims " + std::to_string(n_dims) + " not in 1.." + std::to_string(kMaxDims));
  }
  t->ne.resize(n_dims);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    RDRR_RETURN_IF_ERROR(c.read(&t->ne[d], "ne[" + std::to_string(d) + "]"));
    if (t->ne[d] == 0) return error(StatusCode::kValidation, "ne[" + std::to_string(d) + "] is 0 (zero-size tensor)");
    if (__builtin_mul_overflow(numel, t->ne[d], &numel) || numel > static_cast<uint64_t>(INT64_MAX)) {
      return error(StatusCode::kValidation, "element count overflows at ne[" + std::to_string(d) + "] = " +
                                                std::to_string(t->ne[d]));
    }
  }
  uint32_t type_id = 0;
  RDRR_RETURN_IF_ERROR(c.read(&type_id, "type"));
  const auto info = ggml_type_info(type_id);
  if (!info) {
    if (const auto name = ggml_type_id_name(type_id); name && !name->empty()) {
      return error(StatusCode::kUnsupported, "unsupported ggml type " + std::string(*name) + " (" +
                                                 std::to_string(type_id) + ")");
    }
    return error(StatusCode::kSchema, "unknown ggml type id " + std::to_string(type_id));
  }
  t->type = info->type;
  RDRR_RETURN_IF_ERROR(c.read(&t->offset_bytes, "offset"));
  return Status::Ok();
}

using KeyIndex = std::map<std::string, size_t, std::less<>>;

Status read_preamble(Cursor& c, uint32_t* version, uint64_t* n_tensors, uint64_t* n_kv) {
  RDRR_RETURN_IF_ERROR(c.need(4, "magic"));
  const auto magic = c.take(4);
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) {
    std::string printable;
    for (std::byte b : magic) printable += std::isprint(static_cast<int>(b)) ? static_cast<char>(b) : '.';
    return error(StatusCode::kParse, "bad magic: expected 'GGUF' (47 47 55 46), got '" + printable + "' (" +
                                         hex_bytes(magic) + ")");
  }
  RDRR_RETURN_IF_ERROR(c.read(version, "version"));
  if (*version != 2 && *version != 3) {
    if (*version >= 0x10000u && (*version & 0xffffu) == 0) {
      return error(StatusCode::kUnsupported, "big-endian GGUF (version field " + std::to_string(*version) +
                                                 ") is not supported");
    }
    return error(StatusCode::kSchema, "unsupported GGUF version " + std::to_string(*version) + " (supported: 2, 3)");
  }
  RDRR_RETURN_IF_ERROR(c.read(n_tensors, "tensor count"));
  return c.read(n_kv, "metadata count");
}

Status read_kv(Cursor& c, uint64_t i, GgufKv* kv, KeyIndex* index) {
  RDRR_RETURN_IF_ERROR(c.read_string(&kv->key, "key"));
  if (kv->key.empty()) return error(StatusCode::kValidation, "empty key");
  const auto [it, inserted] = index->emplace(kv->key, i);
  if (!inserted) {
    return error(StatusCode::kValidation, "duplicate metadata key (also entry " + std::to_string(it->second) + ")");
  }
  RDRR_ASSIGN_OR_RETURN(kv->value.type, read_value_type(c, "value type"));
  return read_value(c, &kv->value);
}

// The counts are not trusted: vectors grow entry by entry (each entry consumes bytes, so a hostile count
// ends in a "truncated" error naming the entry) and reservations are bounded by the bytes left.
Status read_metadata(Cursor& c, uint64_t n_kv, std::vector<GgufKv>* kvs, KeyIndex* index) {
  kvs->reserve(std::min<uint64_t>(n_kv, c.remaining() / kMinKvBytes));
  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKv& kv = kvs->emplace_back();
    const Status s = read_kv(c, i, &kv, index);
    if (!s.ok()) {
      return s.context("metadata entry " + std::to_string(i) + (kv.key.empty() ? "" : " (key '" + kv.key + "')"));
    }
  }
  return Status::Ok();
}

Result<uint32_t> alignment_from(const GgufValue* a) {
  if (a == nullptr) return kGgufDefaultAlignment;
  if (a->type != GgufValueType::kU32) {
    return error(StatusCode::kSchema, "general.alignment: expected u32, found " +
                                          std::string(gguf_value_type_name(a->type)));
  }
  const uint64_t v = std::get<uint64_t>(a->data);
  if (v == 0 || !std::has_single_bit(v)) {
    return error(StatusCode::kValidation, "general.alignment " + std::to_string(v) + " is not a power of two");
  }
  return static_cast<uint32_t>(v);
}

Status read_tensor_infos(Cursor& c, uint64_t n_tensors, std::vector<GgufTensor>* tensors, KeyIndex* index) {
  tensors->reserve(std::min<uint64_t>(n_tensors, c.remaining() / kMinTensorInfoBytes));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor& t = tensors->emplace_back();
    Status s = read_tensor_info(c, &t);
    if (s.ok()) {
      const auto [it, inserted] = index->emplace(t.name, i);
      if (!inserted) {
        s = error(StatusCode::kValidation, "duplicate tensor name (also tensor info " + std::to_string(it->second) + ")");
      }
    }
    if (!s.ok()) return s.context("tensor info " + std::to_string(i) + (t.name.empty() ? "" : " ('" + t.name + "')"));
  }
  return Status::Ok();
}

// Checks block geometry, alignment and bounds; sets t->bytes.
Status place_tensor(std::span<const std::byte> file, uint64_t data_offset, uint32_t alignment, GgufTensor* t) {
  const std::string where = "tensor '" + t->name + "' (" + std::string(t->type_name()) + ")";
  const GgmlTypeInfo info = *ggml_type_info(static_cast<uint32_t>(t->type));
  if (t->ne[0] % info.block_elems != 0) {
    return error(StatusCode::kValidation, where + ": ne[0] = " + std::to_string(t->ne[0]) +
                                              " is not a multiple of the block size " + std::to_string(info.block_elems));
  }
  if (t->offset_bytes % alignment != 0) {
    return error(StatusCode::kValidation, where + ": offset " + std::to_string(t->offset_bytes) +
                                              " is not a multiple of the alignment " + std::to_string(alignment));
  }
  uint64_t size = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
  if (__builtin_mul_overflow(t->numel() / info.block_elems, uint64_t{info.block_bytes}, &size) ||
      __builtin_add_overflow(data_offset, t->offset_bytes, &begin) || __builtin_add_overflow(begin, size, &end) ||
      end > file.size()) {
    return error(StatusCode::kValidation, where + ": data [" + std::to_string(t->offset_bytes) + ", +" +
                                              std::to_string(size) + ") at data section offset " +
                                              std::to_string(data_offset) + " is out of bounds (file has " +
                                              std::to_string(file.size()) + " bytes)");
  }
  t->bytes = file.subspan(begin, size);
  return Status::Ok();
}

Status check_overlaps(const std::vector<GgufTensor>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tensors[a].offset_bytes < tensors[b].offset_bytes; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = tensors[order[k - 1]];
    const GgufTensor& cur = tensors[order[k]];
    const uint64_t prev_end = prev.offset_bytes + prev.bytes.size();
    if (cur.offset_bytes < prev_end) {
      return error(StatusCode::kValidation, "tensor '" + cur.name + "' at offset " + std::to_string(cur.offset_bytes) +
                                                " overlaps tensor '" + prev.name + "' [" +
                                                std::to_string(prev.offset_bytes) + ", " + std::to_string(prev_end) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  GgufFile g;
  RDRR_ASSIGN_OR_RETURN(g.file_, MappedFile::open(path));
  RDRR_RETURN_IF_ERROR(g.parse().context(path.string()));
  return g;
}

Status GgufFile::parse() {
  Cursor c(file_.bytes());
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  RDRR_RETURN_IF_ERROR(read_preamble(c, &version_, &n_tensors, &n_kv));
  RDRR_RETURN_IF_ERROR(read_metadata(c, n_kv, &kvs_, &kv_index_));
  RDRR_ASSIGN_OR_RETURN(alignment_, alignment_from(find("general.alignment")));
  RDRR_RETURN_IF_ERROR(read_tensor_infos(c, n_tensors, &tensors_, &tensor_index_));
  data_offset_bytes_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensor& t : tensors_) {
    RDRR_RETURN_IF_ERROR(place_tensor(file_.bytes(), data_offset_bytes_, alignment_, &t));
  }
  return check_overlaps(tensors_);
}

}  // namespace rdrr::convert
