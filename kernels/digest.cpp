#include "kernels/digest.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "rdrr/sha256.h"

namespace rdrr::kernels {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxIncludeDepth = 32;

Result<std::string> read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return error(StatusCode::kNotFound, path.string() + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return error(StatusCode::kIo, path.string() + ": read failed");
  return normalize_line_endings(ss.str());
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Returns nullopt-like empty optional when `line` is not a preprocessor include; the quoted path when it is
// `#include "path"` (whitespace allowed around '#' and before the path); an error for other include forms.
Result<std::optional<std::string>> parse_include(std::string_view line) {
  std::string_view s = trim_left(line);
  if (s.empty() || s.front() != '#') return std::optional<std::string>();
  s = trim_left(s.substr(1));
  if (s.substr(0, 7) != "include") return std::optional<std::string>();
  s = trim_left(s.substr(7));
  if (s.size() < 2 || s.front() != '"') {
    return error(StatusCode::kInvalidArgument, "unsupported include form (only #include \"path\"): " + std::string(line));
  }
  const size_t close = s.find('"', 1);
  if (close == std::string_view::npos || close == 1) {
    return error(StatusCode::kInvalidArgument, "malformed #include line: " + std::string(line));
  }
  return std::optional<std::string>(std::string(s.substr(1, close - 1)));
}

std::string rel_name(const fs::path& path, const fs::path& kernels_dir) {
  return path.lexically_normal().lexically_relative(kernels_dir.lexically_normal()).generic_string();
}

struct Expander {
  fs::path kernels_dir;
  std::map<std::string, std::string>* sources;
  std::vector<std::string> stack;  // files being expanded (cycle detection)

  Result<fs::path> resolve(const fs::path& including, const std::string& inc) const {
    std::error_code ec;
    const fs::path local = (including.parent_path() / inc).lexically_normal();
    if (fs::is_regular_file(local, ec)) return local;
    const fs::path shared = (kernels_dir / "include" / inc).lexically_normal();
    if (fs::is_regular_file(shared, ec)) return shared;
    return error(StatusCode::kNotFound, "include \"" + inc + "\" not found (looked at " + local.string() + " and " +
                                            shared.string() + ")");
  }

  // Appends the expanded text of `path` to `out`.
  Status expand(const fs::path& path, std::string& out) {
    const std::string name = rel_name(path, kernels_dir);
    for (const std::string& s : stack) {
      if (s == name) return error(StatusCode::kInvalidArgument, "include cycle through " + name);
    }
    if (stack.size() >= kMaxIncludeDepth) return error(StatusCode::kInvalidArgument, "includes nested too deep at " + name);
    RDRR_ASSIGN_OR_RETURN(std::string text, read_text(path));
    (*sources)[name] = "sha256:" + sha256_hex(text);
    stack.push_back(name);
    size_t pos = 0;
    size_t line_no = 1;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      const bool has_lf = eol != std::string::npos;
      if (!has_lf) eol = text.size();
      const std::string_view line(text.data() + pos, eol - pos);
      Result<std::optional<std::string>> inc = parse_include(line);
      if (!inc.ok()) return inc.status().context(name + ":" + std::to_string(line_no));
      if (inc->has_value()) {
        Result<fs::path> target = resolve(path, **inc);
        if (!target.ok()) return target.status().context(name + ":" + std::to_string(line_no));
        RDRR_RETURN_IF_ERROR(expand(*target, out));
      } else {
        out.append(line);
      }
      if (has_lf) out.push_back('\n');
      pos = eol + (has_lf ? 1 : 0);
      ++line_no;
    }
    stack.pop_back();
    return Status::Ok();
  }
};

}  // namespace

std::string normalize_line_endings(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out.push_back(text[i]);
  }
  return out;
}

Result<KernelDigest> kernel_digest(const KernelVariantSource& variant, const fs::path& kernels_dir) {
  const std::string ctx = "kernel " + variant.name;
  if (variant.entry.empty()) return error(StatusCode::kInvalidArgument, ctx + ": empty entry point");
  if (variant.file.empty()) return error(StatusCode::kInvalidArgument, ctx + ": empty source file");
  KernelDigest result;
  Expander ex{kernels_dir, &result.sources, {}};
  std::string text;
  Status st = ex.expand(kernels_dir / variant.file, text);
  if (!st.ok()) return std::move(st).context(ctx);
  text += "\n@@entry:" + variant.entry;
  for (const auto& [name, value] : variant.defines) text += "\n@@define:" + name + "=" + value;
  for (const auto& [id, value] : variant.spec) text += "\n@@spec:" + std::to_string(id) + "=" + std::to_string(value);
  result.digest = "sha256:" + sha256_hex(text);
  return result;
}

Result<KernelVariantSource> variant_from_registry(const KernelInfo& info) {
  KernelVariantSource v;
  v.name = std::string(info.name);
  v.file = std::string(info.file);
  v.entry = std::string(info.entry);
  std::istringstream words{std::string(info.defines)};
  std::string word;
  while (words >> word) {
    const size_t eq = word.find('=');
    std::string name = word.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : word.substr(eq + 1);
    if (name.empty()) {
      return error(StatusCode::kInvalidArgument, "kernel " + v.name + ": define '" + word + "' has no name");
    }
    if (!v.defines.emplace(name, std::move(value)).second) {
      return error(StatusCode::kInvalidArgument, "kernel " + v.name + ": define " + name + " given twice");
    }
  }
  for (const SpecInfo& s : info.spec) {
    if (!v.spec.emplace(s.id, s.default_value).second) {
      return error(StatusCode::kInvalidArgument,
                   "kernel " + v.name + ": specialization constant id " + std::to_string(s.id) + " given twice");
    }
  }
  return v;
}

}  // namespace rdrr::kernels
