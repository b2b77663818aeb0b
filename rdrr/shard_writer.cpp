#include "rdrr/shard_writer.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <utility>

namespace rdrr {
namespace {

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

Status validate_max_shard_bytes(uint64_t max_shard_bytes) {
  if (max_shard_bytes < kTensorAlignmentBytes || max_shard_bytes % kTensorAlignmentBytes != 0) {
    return error(StatusCode::kInvalidArgument,
                 "shard size " + std::to_string(max_shard_bytes) + " bytes: must be a positive multiple of " +
                     std::to_string(kTensorAlignmentBytes));
  }
  return Status::Ok();
}

// ---- ShardPlanner ----

Result<ShardPlanner> ShardPlanner::create(uint64_t max_shard_bytes) {
  RDRR_RETURN_IF_ERROR(validate_max_shard_bytes(max_shard_bytes));
  return ShardPlanner(max_shard_bytes);
}

Result<TensorPlacement> ShardPlanner::place(uint64_t size_bytes) {
  const uint64_t s = max_shard_bytes_;
  // Work on local copies so that an error leaves the planner unchanged.
  uint64_t shard_count = shard_sizes_.empty() ? 1 : shard_sizes_.size();
  uint64_t p = shard_sizes_.empty() ? 0 : shard_sizes_.back();
  uint64_t a = align_up(p, kTensorAlignmentBytes);  // <= s because s is a multiple of the alignment
  const bool opens_new = p > 0 && size_bytes > s - a;  // rule 1, overflow-free form of a + N > S
  if (opens_new) a = 0;
  // Number of extra shards the spill (rule 3) needs beyond the one the tensor starts in.
  const uint64_t spill_shards = size_bytes <= s - a ? 0 : (size_bytes - (s - a) + s - 1) / s;
  const uint64_t final_count = shard_count + (opens_new ? 1 : 0) + spill_shards;
  if (final_count > kMaxShardCount) {
    return error(StatusCode::kInvalidArgument,
                 "tensor of " + std::to_string(size_bytes) + " bytes: pack would need " + std::to_string(final_count) +
                     " shards (more than " + std::to_string(kMaxShardCount) + "); use a larger shard size");
  }

  if (shard_sizes_.empty()) shard_sizes_.push_back(0);
  if (opens_new) shard_sizes_.push_back(0);
  TensorPlacement placement;
  uint64_t offset = a;
  uint64_t remaining = size_bytes;
  for (;;) {
    const uint64_t take = std::min(remaining, s - offset);
    placement.spans.push_back(Span{static_cast<uint32_t>(shard_sizes_.size() - 1), offset, take});
    shard_sizes_.back() = offset + take;
    remaining -= take;
    if (remaining == 0) break;
    shard_sizes_.push_back(0);
    offset = 0;
  }
  return placement;
}

// ---- ShardWriter ----

Result<ShardWriter> ShardWriter::create(const std::filesystem::path& dir, ShardWriterOptions options) {
  RDRR_ASSIGN_OR_RETURN(ShardPlanner planner, ShardPlanner::create(options.max_shard_bytes));
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return error(StatusCode::kNotFound, dir.string() + ": shard directory does not exist or is not a directory");
  }
  return ShardWriter(dir, options, std::move(planner));
}

Status ShardWriter::usable() const {
  if (!failed_.ok()) return failed_;
  if (finished_) return error(StatusCode::kInvalidArgument, "shard writer: already finished");
  return Status::Ok();
}

Status ShardWriter::fail(Status status) {
  failed_ = status;
  return status;
}

Status ShardWriter::close_current_shard() {
  if (!open_shard_) return Status::Ok();
  const uint32_t index = *open_shard_;
  Result<FileDigest> digest = sink_.finish();
  if (!digest.ok()) return fail(digest.status());
  const uint64_t planned = planner_.shard_sizes()[index];
  if (digest->size_bytes != planned) {
    return fail(error(StatusCode::kInternal, shard_filename(index) + ": wrote " + std::to_string(digest->size_bytes) +
                                                 " bytes, planned " + std::to_string(planned)));
  }
  closed_.push_back(ShardInfo{index, shard_filename(index), digest->size_bytes, std::move(digest->sha256_hex),
                              closed_bytes_});
  closed_bytes_ += digest->size_bytes;
  open_shard_.reset();
  return Status::Ok();
}

Status ShardWriter::open_shard_at(uint32_t shard_index, uint64_t offset_bytes) {
  if (!open_shard_ || *open_shard_ != shard_index) {
    const uint32_t expected = open_shard_ ? *open_shard_ + 1 : static_cast<uint32_t>(closed_.size());
    if (shard_index != expected) {
      return fail(error(StatusCode::kInternal, "shard writer: placement jumps to shard " +
                                                   std::to_string(shard_index) + ", expected " +
                                                   std::to_string(expected)));
    }
    RDRR_RETURN_IF_ERROR(close_current_shard());
    const std::string name = shard_filename(shard_index);
    FileSink::Options sink_options;
    sink_options.buffer_bytes = options_.buffer_bytes;
    sink_options.sync_to_disk = options_.sync_to_disk;
    Result<FileSink> sink = FileSink::create(dir_ / name, name, sink_options);
    if (!sink.ok()) return fail(sink.status());
    sink_ = std::move(sink).value();
    open_shard_ = shard_index;
  }
  if (sink_.size_bytes() > offset_bytes) {
    return fail(error(StatusCode::kInternal, shard_filename(shard_index) + ": tensor offset " +
                                                 std::to_string(offset_bytes) + " < shard size " +
                                                 std::to_string(sink_.size_bytes())));
  }
  Status s = sink_.append_zeros(offset_bytes - sink_.size_bytes());
  if (!s.ok()) return fail(std::move(s));
  return Status::Ok();
}

Status ShardWriter::begin_tensor(uint64_t size_bytes) {
  RDRR_RETURN_IF_ERROR(usable());
  if (in_tensor_) return error(StatusCode::kInvalidArgument, "begin_tensor: previous tensor not ended");
  RDRR_ASSIGN_OR_RETURN(TensorPlacement placement, planner_.place(size_bytes));
  const Span first = placement.spans.front();
  tensor_ = std::move(placement);
  span_index_ = 0;
  span_written_bytes_ = 0;
  tensor_written_bytes_ = 0;
  in_tensor_ = true;
  return open_shard_at(first.shard_index, first.offset_bytes);
}

Status ShardWriter::append(std::span<const std::byte> chunk) {
  RDRR_RETURN_IF_ERROR(usable());
  if (!in_tensor_) return error(StatusCode::kInvalidArgument, "append: no tensor begun");
  const uint64_t total = tensor_.total_bytes();
  if (chunk.size() > total - tensor_written_bytes_) {
    return error(StatusCode::kInvalidArgument,
                 "append: " + std::to_string(chunk.size()) + " bytes exceed the tensor's remaining " +
                     std::to_string(total - tensor_written_bytes_) + " of " + std::to_string(total));
  }
  while (!chunk.empty()) {
    const Span* span = &tensor_.spans[span_index_];
    if (span_written_bytes_ == span->size_bytes) {  // spill into the next shard (rule 3)
      ++span_index_;
      span_written_bytes_ = 0;
      span = &tensor_.spans[span_index_];
      RDRR_RETURN_IF_ERROR(open_shard_at(span->shard_index, span->offset_bytes));
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(chunk.size(), span->size_bytes - span_written_bytes_));
    Status s = sink_.append(chunk.first(take));
    if (!s.ok()) return fail(std::move(s));
    span_written_bytes_ += take;
    tensor_written_bytes_ += take;
    chunk = chunk.subspan(take);
  }
  return Status::Ok();
}

Result<TensorPlacement> ShardWriter::end_tensor() {
  RDRR_RETURN_IF_ERROR(usable());
  if (!in_tensor_) return error(StatusCode::kInvalidArgument, "end_tensor: no tensor begun");
  if (tensor_written_bytes_ != tensor_.total_bytes()) {
    return error(StatusCode::kInvalidArgument, "end_tensor: " + std::to_string(tensor_written_bytes_) + " of " +
                                                   std::to_string(tensor_.total_bytes()) + " bytes appended");
  }
  in_tensor_ = false;
  return std::move(tensor_);
}

Result<TensorPlacement> ShardWriter::add_tensor(std::span<const std::byte> bytes) {
  RDRR_RETURN_IF_ERROR(begin_tensor(bytes.size()));
  RDRR_RETURN_IF_ERROR(append(bytes));
  return end_tensor();
}

Result<std::vector<ShardInfo>> ShardWriter::finish() {
  RDRR_RETURN_IF_ERROR(usable());
  if (in_tensor_) return error(StatusCode::kInvalidArgument, "finish: a tensor is still open");
  RDRR_RETURN_IF_ERROR(close_current_shard());
  finished_ = true;
  return closed_;
}

uint64_t ShardWriter::bytes_written() const { return closed_bytes_ + (open_shard_ ? sink_.size_bytes() : 0); }

}  // namespace rdrr
