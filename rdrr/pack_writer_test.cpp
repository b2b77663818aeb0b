#include "rdrr/pack_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "rdrr/io_test_util.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/sha256.h"
#include "rdrr/shard_reader.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

namespace fs = std::filesystem;
using testing_io::list_dir;
using testing_io::make_bytes;
using test::TempDir;

constexpr uint64_t kS = 4096;

PackWriterOptions small(bool force = false) {
  PackWriterOptions o;
  o.force = force;
  o.shard_size_bytes = kS;
  o.write_buffer_bytes = 1024;
  return o;
}

std::string slurp(const fs::path& p) {
  const std::vector<std::byte> b = testing_io::read_file(p);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Writes a complete small pack whose manifest text is `manifest`.
void write_pack(const fs::path& out, const std::string& manifest, bool force) {
  Result<PackWriter> w = PackWriter::create(out, small(force));
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE(w->shards().add_tensor(make_bytes(1, 5000)).ok());
  ASSERT_TRUE(w->finish_shards().ok());
  ASSERT_TRUE(w->commit(manifest).ok());
}

TEST(PackWriter, NothingAtOutUntilCommitThenACompletePack) {
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  Result<PackWriter> w = PackWriter::create(out, small());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  const fs::path temp = w->temp_dir();
  EXPECT_EQ(temp.parent_path(), tmp.path());
  EXPECT_EQ(temp.filename().string().rfind("model.tmp-", 0), 0u) << temp;

  const auto t0 = make_bytes(1, 3000);
  const auto t1 = make_bytes(2, 9000);
  Result<TensorPlacement> p0 = w->shards().add_tensor(t0);
  Result<TensorPlacement> p1 = w->shards().add_tensor(t1);
  ASSERT_TRUE(p0.ok() && p1.ok());
  Result<std::vector<ShardInfo>> shards = w->finish_shards();
  ASSERT_TRUE(shards.ok()) << shards.status().to_string();
  EXPECT_EQ(shards->size(), 4u);

  Result<PackFileEntry> tok = w->add_file("tokenizer.json", std::string_view("{\"tok\":1}"));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->size_bytes, 9u);
  EXPECT_EQ(tok->sha256_hex, sha256_hex(std::string_view("{\"tok\":1}")));
  const fs::path src = tmp.path() / "golden_src.json";
  testing_io::write_file(src, "[1,2,3]");
  Result<PackFileEntry> golden = w->copy_file(src, "golden/prompt_0.json");
  ASSERT_TRUE(golden.ok()) << golden.status().to_string();
  EXPECT_EQ(golden->sha256_hex, *sha256_file(src));
  EXPECT_EQ(w->files().size(), 2u);

  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(temp / "manifest.json"));  // never a valid pack before commit
  ASSERT_TRUE(w->commit("{\"version\":1}").ok());
  EXPECT_TRUE(w->committed());
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(slurp(out / "manifest.json"), "{\"version\":1}");
  EXPECT_EQ(slurp(out / "tokenizer.json"), "{\"tok\":1}");
  EXPECT_EQ(slurp(out / "golden" / "prompt_0.json"), "[1,2,3]");
  EXPECT_EQ(list_dir(tmp.path()), (std::vector<std::string>{"golden_src.json", "model"}));

  // The committed shards read back.
  Result<ShardReader> reader = ShardReader::open(out, *shards);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader->verify_all().ok());
  Result<TensorBytes> back = reader->tensor_bytes("t1", *p1);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::equal(back->bytes().begin(), back->bytes().end(), t1.begin(), t1.end()));

  EXPECT_EQ(w->commit("{}").code(), StatusCode::kInvalidArgument);  // only once
  EXPECT_EQ(w->add_file("x.txt", std::string_view("x")).status().code(), StatusCode::kInvalidArgument);
}

TEST(PackWriter, TrailingSlashOutDirWorks) {
  TempDir tmp;
  write_pack(tmp.path() / "model/", "{}", false);
  EXPECT_TRUE(fs::exists(tmp.path() / "model" / "manifest.json"));
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"model"});
}

TEST(PackWriter, AbandonedWriterLeavesNothing) {
  TempDir tmp;
  {
    Result<PackWriter> w = PackWriter::create(tmp.path() / "model", small());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->shards().add_tensor(make_bytes(1, 10000)).ok());
    ASSERT_TRUE(w->add_file("golden/a.json", std::string_view("{}")).ok());
    EXPECT_FALSE(list_dir(tmp.path()).empty());
    PackWriter moved = std::move(w).value();  // ownership moves; the moved-from writer removes nothing
    EXPECT_TRUE(fs::exists(moved.temp_dir()));
  }
  EXPECT_TRUE(list_dir(tmp.path()).empty());
}

// The pid of a child that has exited and been reaped: no process has it (until the pid is reused).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// A writer killed together with its parent is a zombie until init reaps it: its scratch is stale already
// (fault_injection_e2e: rdrr-batch killed with its converter, then resumed at once, left the scratch behind).
TEST(PackWriter, CreateRemovesScratchOfZombieWriters) {
  TempDir tmp;
  const pid_t zombie = ::fork();
  ASSERT_GE(zombie, 0);
  if (zombie == 0) ::_exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);  // exited, not reaped
  const std::string name = "model.tmp-" + std::to_string(zombie) + "-0123456789abcdef";
  fs::create_directory(tmp / name);
  Result<PackWriter> w = PackWriter::create(tmp / "model", small());
  ::waitpid(zombie, nullptr, 0);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->removed_scratch(), std::vector<std::string>{name});
  EXPECT_FALSE(fs::exists(tmp / name));
}

// A writer killed with SIGKILL leaves "<out>.tmp-<pid>-<hex>" (or, mid-swap, "<out>.old-<pid>-<hex>"); the
// next create() for the same <out> removes those of dead pids and nothing else.
TEST(PackWriter, CreateRemovesScratchOfKilledWritersOnly) {
  TempDir tmp;
  const std::string dead = std::to_string(dead_pid());
  const std::string hex = "0123456789abcdef";
  const std::vector<std::string> stale = {"model.old-" + dead + "-fedcba9876543210", "model.tmp-" + dead + "-" + hex};
  const std::vector<std::string> kept = {
      "model.tmp-" + std::to_string(::getpid()) + "-" + hex,   // this process: alive
      "model.tmp-" + std::to_string(::getppid()) + "-" + hex,  // alive
      "model.tmp-1-" + hex,                                    // init: alive (EPERM when not root)
      "other.tmp-" + dead + "-" + hex,                         // another output's scratch
      "model2.tmp-" + dead + "-" + hex,
      "model.tmp-" + dead + "-0123456789ABCDEF",  // not what unique_suffix() writes
      "model.tmp-" + dead + "-" + hex + "0",
      "model.tmp-" + dead + "-" + hex.substr(1),
      "model.tmp-0" + dead + "-" + hex,
      "model.tmp--" + hex,
      "model.bak-" + dead + "-" + hex,
      "model.tmp-" + dead + "-" + hex + ".keep",
  };
  for (const std::string& name : stale) {
    fs::create_directory(tmp / name);
    testing_io::write_file(tmp / name / "shard_00000.bin", "partial");
  }
  testing_io::write_file(tmp / stale[0] / "manifest.json", "{}");  // an old pack moved aside mid-swap
  for (const std::string& name : kept) {
    fs::create_directory(tmp / name);
    testing_io::write_file(tmp / name / "keep.txt", "keep");
  }
  Result<PackWriter> w = PackWriter::create(tmp / "model", small());
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(w->removed_scratch(), stale);
  for (const std::string& name : stale) EXPECT_FALSE(fs::exists(tmp / name)) << name;
  for (const std::string& name : kept) EXPECT_EQ(slurp(tmp / name / "keep.txt"), "keep") << name;
  ASSERT_TRUE(w->finish_shards().ok());
  ASSERT_TRUE(w->commit("{}").ok());
  EXPECT_TRUE(fs::exists(tmp / "model" / "manifest.json"));
  // A stale file (not a folder) of the exact pattern goes too; a refused create() removes nothing.
  testing_io::write_file(tmp / ("model.tmp-" + dead + "-" + hex), "x");
  EXPECT_EQ(PackWriter::create(tmp / "model", small()).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(fs::exists(tmp / ("model.tmp-" + dead + "-" + hex)));
  Result<PackWriter> again = PackWriter::create(tmp / "next", small());
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(again->removed_scratch().empty());
  fs::remove_all(tmp / "model");
  Result<PackWriter> third = PackWriter::create(tmp / "model", small());
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_EQ(third->removed_scratch(), std::vector<std::string>{"model.tmp-" + dead + "-" + hex});
}

TEST(PackWriter, ExistingOutDirRefusedWithoutForce) {
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  write_pack(out, "old", false);
  const Result<PackWriter> w = PackWriter::create(out, small());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(w.status().message().find(out.string()), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("--force"), std::string::npos) << w.status().message();
  EXPECT_EQ(slurp(out / "manifest.json"), "old");
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"model"});
}

// Every file below `dir` (relative, sorted) with its bytes.
std::vector<std::pair<std::string, std::string>> tree(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    files.emplace_back(rel, e.is_directory() ? std::string("<dir>") : slurp(e.path()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A pack as the converter leaves it (manifest, shards, tokenizer files, golden/), from the test helpers.
void write_real_pack(const fs::path& out) {
  ASSERT_TRUE(testing::write_pack_files(testing::tiny_gemma3_manifest(), out));
  ASSERT_TRUE(fs::exists(out / "golden"));
  ASSERT_TRUE(fs::exists(out / "tokenizer.json"));
}

TEST(PackWriter, ForceReplacesAnExistingPack) {
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  write_real_pack(out);
  write_pack(out, "new", true);
  EXPECT_EQ(slurp(out / "manifest.json"), "new");
  EXPECT_EQ(list_dir(out), (std::vector<std::string>{"manifest.json", "shard_00000.bin", "shard_00001.bin"}));
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"model"});  // no .old-/.tmp- leftovers
}

// A pack holding anything its manifest does not list (a stale extra file, a note in golden/, a folder
// where a shard belongs) may hold the user's files: refused, nothing changed, the first entry named.
TEST(PackWriter, ForceRefusesAPackHoldingUnlistedEntries) {
  struct Case {
    const char* entry;
    bool folder;
    const char* fragment;
  };
  const Case cases[] = {
      {"stale_extra.txt", false, "holds \"stale_extra.txt\", which its manifest does not list"},
      {"golden/notes.txt", false, "holds \"golden/notes.txt\", which its manifest does not list"},
      {"a_user_folder", true, "holds \"a_user_folder\", which its manifest does not list"},
  };
  for (const Case& c : cases) {
    TempDir tmp;
    const fs::path out = tmp.path() / "model";
    write_real_pack(out);
    if (c.folder) {
      fs::create_directory(out / c.entry);
      testing_io::write_file(out / c.entry / "thesis.tex", "precious");
    } else {
      testing_io::write_file(out / c.entry, "precious");
    }
    const auto before = tree(out);
    const Result<PackWriter> w = PackWriter::create(out, small(true));
    ASSERT_FALSE(w.ok()) << c.entry;
    EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
    EXPECT_NE(w.status().message().find(c.fragment), std::string::npos) << w.status().message();
    EXPECT_NE(w.status().message().find("nothing was changed"), std::string::npos) << w.status().message();
    EXPECT_EQ(tree(out), before) << c.entry;
    EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"model"});
  }
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  write_real_pack(out);
  fs::remove(out / "shard_00000.bin");
  fs::create_directory(out / "shard_00000.bin");
  testing_io::write_file(out / "shard_00000.bin" / "thesis.tex", "precious");
  const Result<PackWriter> w = PackWriter::create(out, small(true));
  EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(w.status().message().find("holds a folder \"shard_00000.bin\" where its manifest lists a file"),
            std::string::npos)
      << w.status().message();
  EXPECT_EQ(slurp(out / "shard_00000.bin" / "thesis.tex"), "precious");
}

// A folder with some other program's manifest.json (or one this writer did not write as a manifest) is not
// a pack: --force refuses it and leaves every file as it was.
TEST(PackWriter, ForceRefusesAForeignManifestJson) {
  for (const std::string manifest : {"{\"name\": \"my-npm-thing\"}", "old", ""}) {
    TempDir tmp;
    const fs::path out = tmp.path() / "project";
    fs::create_directories(out / "src");
    testing_io::write_file(out / "manifest.json", manifest);
    testing_io::write_file(out / "package.json", "{}");
    testing_io::write_file(out / "src" / "index.js", "precious");
    const auto before = tree(out);
    const Result<PackWriter> w = PackWriter::create(out, small(true));
    ASSERT_FALSE(w.ok()) << manifest;
    EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
    EXPECT_NE(w.status().message().find(out.string() + ": exists and is not an rdrr pack (manifest.json"),
              std::string::npos)
        << w.status().message();
    EXPECT_NE(w.status().message().find("nothing was changed"), std::string::npos) << w.status().message();
    EXPECT_EQ(tree(out), before);
    EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"project"});
  }
}

TEST(PackWriter, ForceReplacesAnEmptyDirectory) {
  TempDir tmp;
  fs::create_directory(tmp.path() / "model");
  write_pack(tmp.path() / "model", "new", true);
  EXPECT_EQ(slurp(tmp.path() / "model" / "manifest.json"), "new");
}

TEST(PackWriter, ForceRefusesADirectoryThatIsNotAPack) {
  TempDir tmp;
  const fs::path out = tmp.path() / "home";
  fs::create_directory(out);
  testing_io::write_file(out / "thesis.tex", "precious");
  const Result<PackWriter> w = PackWriter::create(out, small(true));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(w.status().message().find("not an rdrr pack"), std::string::npos) << w.status().message();
  testing_io::write_file(tmp.path() / "file", "x");
  const Result<PackWriter> f = PackWriter::create(tmp.path() / "file", small(true));
  EXPECT_EQ(f.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(f.status().message().find("not a directory"), std::string::npos) << f.status().message();
  EXPECT_EQ(slurp(out / "thesis.tex"), "precious");
}

TEST(PackWriter, OutDirAppearingDuringWriteIsNotClobbered) {
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  {
    Result<PackWriter> w = PackWriter::create(out, small());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->finish_shards().ok());
    fs::create_directory(out);  // someone else creates it meanwhile (empty: rename(2) would replace it)
    const Status s = w->commit("{}");
    EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
    EXPECT_NE(s.message().find("appeared"), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(w->temp_dir() / "manifest.json"));
  }
  EXPECT_TRUE(fs::is_empty(out));
  EXPECT_EQ(list_dir(tmp.path()), std::vector<std::string>{"model"});
}

TEST(PackWriter, CommitBeforeFinishShardsIsRejected) {
  TempDir tmp;
  Result<PackWriter> w = PackWriter::create(tmp.path() / "model", small());
  ASSERT_TRUE(w.ok());
  const Status s = w->commit("{}");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("finish_shards"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(tmp.path() / "model"));
}

TEST(PackWriter, FileNameValidation) {
  struct Case {
    const char* name;
    const char* reason;
  };
  const Case bad[] = {
      {"", "is empty"},
      {"/etc/passwd", "absolute path"},
      {"../evil", "'..' component"},
      {"golden/../../evil", "'..' component"},
      {"./tokenizer.json", "'.' or '..' component"},
      {"a\\b", "backslash"},
      {"a//b", "empty path component"},
      {"golden/", "empty path component"},
      {"bad\nname", "control character"},
      {"manifest.json", "reserved"},
      {"shard_00000.bin", "reserved"},
  };
  for (const Case& c : bad) {
    const Status s = validate_pack_file_name(c.name);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("pack file name"), std::string::npos) << s.message();
  }
  for (const char* good : {"tokenizer.json", "tokenizer.model", "golden/prompt_0.json", "golden/shard_0.bin",
                           "a..b", ".hidden"}) {
    EXPECT_TRUE(validate_pack_file_name(good).ok()) << good;
  }

  TempDir tmp;
  Result<PackWriter> w = PackWriter::create(tmp.path() / "model", small());
  ASSERT_TRUE(w.ok());
  const Result<PackFileEntry> escape = w->add_file("../outside.txt", std::string_view("x"));
  EXPECT_EQ(escape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(tmp.path() / "outside.txt"));
  ASSERT_TRUE(w->add_file("tokenizer.json", std::string_view("a")).ok());
  const Result<PackFileEntry> twice = w->add_file("tokenizer.json", std::string_view("b"));
  EXPECT_EQ(twice.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(twice.status().message().find("added twice"), std::string::npos);
  const Result<PackFileEntry> missing = w->copy_file(tmp.path() / "nope.json", "nope.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);
}

TEST(PackWriter, ParentDirectoryProblemsNameThePath) {
  TempDir tmp;
  const Result<PackWriter> no_parent = PackWriter::create(tmp.path() / "missing" / "model", small());
  EXPECT_EQ(no_parent.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_parent.status().message().find("missing"), std::string::npos) << no_parent.status().message();

  testing_io::write_file(tmp.path() / "plainfile", "x");
  const Result<PackWriter> file_parent = PackWriter::create(tmp.path() / "plainfile" / "model", small());
  EXPECT_EQ(file_parent.status().code(), StatusCode::kIo);
  EXPECT_NE(file_parent.status().message().find("plainfile"), std::string::npos);

  EXPECT_EQ(PackWriter::create(tmp.path() / "m", [] {
              PackWriterOptions o;
              o.shard_size_bytes = 1000;
              return o;
            }())
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(PackWriter, UnwritableParentIsIoError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir tmp;
  const fs::path ro = tmp.path() / "ro";
  fs::create_directory(ro);
  ::chmod(ro.c_str(), 0555);
  const Result<PackWriter> w = PackWriter::create(ro / "model", small());
  ::chmod(ro.c_str(), 0755);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kIo);
  EXPECT_NE(w.status().message().find(ro.string()), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("Permission denied"), std::string::npos) << w.status().message();
}

TEST(PackWriter, DiskFullIsNoSpaceAndLeavesNothing) {
  TempDir tmp;
  const fs::path out = tmp.path() / "model";
  Status failure;
  {
    PackWriterOptions o = small();
    o.shard_size_bytes = 1u << 20;
    Result<PackWriter> w = PackWriter::create(out, o);
    ASSERT_TRUE(w.ok());
    {
      testing_io::ScopedFileSizeLimit limit(50000);
      ASSERT_TRUE(limit.ok());
      for (int i = 0; i < 40 && failure.ok(); ++i) failure = w->shards().add_tensor(make_bytes(i, 4000)).status();
      if (failure.ok()) failure = w->finish_shards().status();
    }
    EXPECT_EQ(w->commit("{}").code(), StatusCode::kInvalidArgument);  // shards never finished
  }
  EXPECT_EQ(failure.code(), StatusCode::kNoSpace);
  EXPECT_NE(failure.message().find("shard_00000.bin: write failed: File too large"), std::string::npos)
      << failure.message();
  EXPECT_TRUE(list_dir(tmp.path()).empty());
}

}  // namespace
}  // namespace rdrr
