// rdrr-batch jobs: the job list (JSON or plain text), deterministic sharding and source fingerprints.
//
// JSON jobs file:
//   {"jobs": [{"source": "models/llama", "output": "packs/llama-q4", "flags": ["--quantize", "q4_k_m"],
//              "name": "llama-q4", "verify_flags": ["--skip-gpu"], "mem": "8G"}]}
//   source, output: required strings; relative paths are taken from the jobs file's folder.
//   Outputs are apart: no two are the same folder (after resolving a trailing slash, ".." and symlinks:
//   weakly_canonical) and none lies inside another (the outer pack would hold the inner one's files).
//   flags, verify_flags: optional string arrays passed to rdrr-convert / rdrr-verify.
//   name: optional, default the output folder's name; names are unique ([A-Za-z0-9._-], 1-128 bytes).
//   mem: optional memory estimate for the scheduler ("512M", "8G" or bytes); default estimate_job_mem_bytes.
// Plain list: one job per line, `SOURCE OUTPUT [convert flags...]`, whitespace-separated, `#` starts a
// comment, blank lines ignored. No quoting: paths with spaces need the JSON form.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"

namespace rdrr::batch {

struct Job {
  std::string name;
  std::filesystem::path source;
  std::filesystem::path output;
  std::vector<std::string> convert_flags;
  std::vector<std::string> verify_flags;
  uint64_t mem_bytes = 0;  // 0: estimate_job_mem_bytes
};

// Errors (message names the file, the job index and the field): kParse (not JSON where JSON was
// expected), kSchema (missing / wrongly typed / unknown field), kValidation (bad name, duplicate name,
// outputs that are the same folder or nest (naming both jobs and paths), empty list, bad mem),
// kNotFound / kIo (jobs file).
Result<std::vector<Job>> parse_jobs(std::string_view text, const std::filesystem::path& jobs_file);
Result<std::vector<Job>> read_jobs(const std::filesystem::path& jobs_file);

// "I/N": this task runs the jobs whose index i (0-based, file order) has i % N == I. 0 <= I < N,
// matching a Slurm array 0..N-1 (SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT).
struct Shard {
  uint32_t index = 0;
  uint32_t count = 1;
};
Result<Shard> parse_shard(std::string_view text);  // kInvalidArgument on a malformed value
std::vector<size_t> shard_job_indices(size_t n_jobs, const Shard& shard);

// "512M", "8G", "1T", "123" (bytes; K/M/G/T binary, optional trailing "B" or "iB").
Result<uint64_t> parse_byte_size(std::string_view text);

// The identity of a job's inputs: SHA-256 over the rdrr version, the convert flags, and every regular
// file of the source (path relative to the source, size, modification time in ns), sorted by path. A
// changed, added or removed source file or flag changes it; re-hashing the data is not needed.
Result<std::string> job_fingerprint(const Job& job);

// Bytes the source occupies (a folder: all regular files below it).
uint64_t source_bytes(const std::filesystem::path& source);

// Scheduler estimate when the job gives none: conversion streams (~256 MiB) but golden generation holds
// the weights in f32 for the CPU reference, so 512 MiB + 2.5 x the source size.
uint64_t estimate_job_mem_bytes(const Job& job);

}  // namespace rdrr::batch
